;; TidyUP: a robot and a human tidy a household together.
;;
;; Capabilities gate the actions of an agent per room: (can-<skill> ?a ?room).
;; The robot is fully capable; the human's facts come from a capability vector.
;; In this planning model a missing capability is a missing precondition, so a
;; cost-optimal planner never schedules the (useless) action. The world's
;; transitions (cecm_ros.domains.tidyup.model) execute such an action as a
;; self-loop instead of rejecting it, following the CE-CM paper.
(define (domain tidyup)
  (:requirements :strips :typing :equality :action-costs)
  (:types agent room item)
  (:predicates
    (agent-at ?a - agent ?r - room)
    (item-at ?i - item ?r - room)
    (holding ?a - agent ?i - item)
    (hand-free ?a - agent)
    (dirty ?i - item)
    (clean ?i - item)
    (has-sink ?r - room)
    (connected ?from ?to - room)
    (can-move ?a - agent ?r - room)
    (can-pick ?a - agent ?r - room)
    (can-place ?a - agent ?r - room)
    (can-wash ?a - agent ?r - room))
  ;; Costs are given per ground action (not only per agent and item) so that the
  ;; planner can add a small tie-breaking weight to each; see cecm_ros/domains/tidyup/model.py.
  (:functions
    (total-cost) - number
    (move-cost ?a - agent ?from ?to - room) - number
    (handling-cost ?a - agent ?i - item ?r - room) - number)

  ;; Going through a door into ?to is gated by the capability move_<?to>.
  (:action move
    :parameters (?a - agent ?from - room ?to - room)
    :precondition (and (agent-at ?a ?from) (not (= ?from ?to)) (connected ?from ?to)
                       (can-move ?a ?to))
    :effect (and (not (agent-at ?a ?from)) (agent-at ?a ?to)
                 (increase (total-cost) (move-cost ?a ?from ?to))))

  (:action pick
    :parameters (?a - agent ?i - item ?r - room)
    :precondition (and (agent-at ?a ?r) (item-at ?i ?r) (hand-free ?a) (can-pick ?a ?r))
    :effect (and (not (item-at ?i ?r)) (not (hand-free ?a)) (holding ?a ?i)
                 (increase (total-cost) (handling-cost ?a ?i ?r))))

  (:action place
    :parameters (?a - agent ?i - item ?r - room)
    :precondition (and (agent-at ?a ?r) (holding ?a ?i) (can-place ?a ?r))
    :effect (and (item-at ?i ?r) (hand-free ?a) (not (holding ?a ?i))
                 (increase (total-cost) (handling-cost ?a ?i ?r))))

  ;; Washing needs the item in hand and a sink in the room.
  (:action wash
    :parameters (?a - agent ?i - item ?r - room)
    :precondition (and (agent-at ?a ?r) (holding ?a ?i) (dirty ?i) (has-sink ?r)
                       (can-wash ?a ?r))
    :effect (and (not (dirty ?i)) (clean ?i)
                 (increase (total-cost) (handling-cost ?a ?i ?r))))
)
