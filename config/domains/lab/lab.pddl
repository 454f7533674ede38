;; A lab: a robot and a person walk between stations, take and put samples,
;; spin them in the centrifuge room and label them at the printer.
(define (domain lab)
  (:requirements :strips :typing :action-costs)
  (:types agent station sample)
  (:predicates (at ?a - agent ?s - station) (sample-at ?x - sample ?s - station)
               (holding ?a - agent ?x - sample) (free ?a - agent)
               (spun ?x - sample) (labelled ?x - sample)
               (path ?from ?to - station) (has-centrifuge ?s - station)
               (has-printer ?s - station))
  (:functions (total-cost) - number)
  (:action walk
    :parameters (?a - agent ?from ?to - station)
    :precondition (and (at ?a ?from) (path ?from ?to))
    :effect (and (not (at ?a ?from)) (at ?a ?to) (increase (total-cost) 2)))
  (:action take
    :parameters (?a - agent ?x - sample ?s - station)
    :precondition (and (at ?a ?s) (sample-at ?x ?s) (free ?a))
    :effect (and (not (sample-at ?x ?s)) (not (free ?a)) (holding ?a ?x)
                 (increase (total-cost) 1)))
  (:action put
    :parameters (?a - agent ?x - sample ?s - station)
    :precondition (and (at ?a ?s) (holding ?a ?x))
    :effect (and (sample-at ?x ?s) (free ?a) (not (holding ?a ?x))
                 (increase (total-cost) 1)))
  (:action spin
    :parameters (?a - agent ?x - sample ?s - station)
    :precondition (and (at ?a ?s) (sample-at ?x ?s) (has-centrifuge ?s) (free ?a))
    :effect (and (spun ?x) (increase (total-cost) 3)))
  (:action label
    :parameters (?a - agent ?x - sample ?s - station)
    :precondition (and (at ?a ?s) (holding ?a ?x) (spun ?x) (has-printer ?s))
    :effect (and (labelled ?x) (increase (total-cost) 2))))
