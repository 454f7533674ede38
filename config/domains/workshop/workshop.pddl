;; Workshop: a robot and a worker fetch parts, assemble them at the bench and inspect
;; them at the inspection desk. An example of a domain of one's own for cecm_ros: the
;; capabilities that gate the worker's actions are declared in domain.yaml, not here.
(define (domain workshop)
  (:requirements :strips :typing :equality :action-costs)
  (:types agent station part)
  (:predicates
    (agent-at ?a - agent ?s - station)
    (part-at ?p - part ?s - station)
    (holding ?a - agent ?p - part)
    (hand-free ?a - agent)
    (assembled ?p - part)
    (inspected ?p - part)
    (connected ?from ?to - station)
    (has-tools ?s - station)
    (has-gauge ?s - station))
  (:functions
    (total-cost) - number
    (move-cost ?a - agent) - number
    (handling-cost ?a - agent) - number
    (assembly-cost ?a - agent) - number
    (inspection-cost ?a - agent) - number)

  (:action move
    :parameters (?a - agent ?from - station ?to - station)
    :precondition (and (agent-at ?a ?from) (not (= ?from ?to)) (connected ?from ?to))
    :effect (and (not (agent-at ?a ?from)) (agent-at ?a ?to)
                 (increase (total-cost) (move-cost ?a))))

  (:action fetch
    :parameters (?a - agent ?p - part ?s - station)
    :precondition (and (agent-at ?a ?s) (part-at ?p ?s) (hand-free ?a))
    :effect (and (not (part-at ?p ?s)) (not (hand-free ?a)) (holding ?a ?p)
                 (increase (total-cost) (handling-cost ?a))))

  (:action place
    :parameters (?a - agent ?p - part ?s - station)
    :precondition (and (agent-at ?a ?s) (holding ?a ?p))
    :effect (and (part-at ?p ?s) (hand-free ?a) (not (holding ?a ?p))
                 (increase (total-cost) (handling-cost ?a))))

  ;; Assembling needs the part on a station with tools and both hands free.
  (:action assemble
    :parameters (?a - agent ?p - part ?s - station)
    :precondition (and (agent-at ?a ?s) (part-at ?p ?s) (has-tools ?s) (hand-free ?a))
    :effect (and (assembled ?p) (increase (total-cost) (assembly-cost ?a))))

  ;; Only an assembled part is inspected, at a station with a gauge.
  (:action inspect
    :parameters (?a - agent ?p - part ?s - station)
    :precondition (and (agent-at ?a ?s) (part-at ?p ?s) (has-gauge ?s) (assembled ?p)
                       (hand-free ?a))
    :effect (and (inspected ?p) (increase (total-cost) (inspection-cost ?a))))
)
