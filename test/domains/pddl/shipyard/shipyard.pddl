;; Shipyard: written the way IPC domains are (typed STRIPS, no costs), for
;; test_published_domain.py. Two workers of one type sail a launch between docks and
;; tow, weld, paint and inspect hulls. What a worker can do is part of the domain already:
;; static predicates of the worker, (can-weld ?w) and the others, that every problem
;; lists in its :init. cecm_ros reads them as capabilities with no edit to this file.
(define (domain shipyard)
  (:requirements :strips :typing)
  (:types worker dock hull)
  (:predicates
    (at ?w - worker ?d - dock)
    (hull-at ?h - hull ?d - dock)
    (link ?from ?to - dock)
    (welded ?h - hull)
    (painted ?h - hull)
    (inspected ?h - hull)
    (can-weld ?w - worker)
    (can-paint ?w - worker)
    (can-inspect ?w - worker)
    (cleared ?w - worker ?d - dock))

  (:action sail
    :parameters (?w - worker ?from ?to - dock)
    :precondition (and (at ?w ?from) (link ?from ?to) (cleared ?w ?to))
    :effect (and (not (at ?w ?from)) (at ?w ?to)))

  (:action tow
    :parameters (?w - worker ?h - hull ?from ?to - dock)
    :precondition (and (at ?w ?from) (hull-at ?h ?from) (link ?from ?to) (cleared ?w ?to))
    :effect (and (not (at ?w ?from)) (at ?w ?to) (not (hull-at ?h ?from)) (hull-at ?h ?to)))

  (:action weld
    :parameters (?w - worker ?h - hull ?d - dock)
    :precondition (and (at ?w ?d) (hull-at ?h ?d) (can-weld ?w))
    :effect (welded ?h))

  (:action paint
    :parameters (?w - worker ?h - hull ?d - dock)
    :precondition (and (at ?w ?d) (hull-at ?h ?d) (welded ?h) (can-paint ?w))
    :effect (painted ?h))

  (:action inspect
    :parameters (?w - worker ?h - hull ?d - dock)
    :precondition (and (at ?w ?d) (hull-at ?h ?d) (painted ?h) (can-inspect ?w))
    :effect (inspected ?h)))
