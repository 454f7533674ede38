(define (problem back-to-bench) (:domain lab)
  (:objects robot tech - agent
            fridge bench hallway centrifuge_room printer - station
            blood urine tissue - sample)
  (:init
    (= (total-cost) 0)
    (at robot centrifuge_room) (at tech printer) (free robot) (free tech)
    (sample-at blood printer) (sample-at urine fridge) (sample-at tissue centrifuge_room)
    (path fridge hallway) (path hallway fridge) (path bench hallway) (path hallway bench)
    (path centrifuge_room hallway) (path hallway centrifuge_room)
    (path printer hallway) (path hallway printer) (path fridge bench) (path bench fridge)
    (has-centrifuge centrifuge_room) (has-printer printer))
  (:goal (and (sample-at blood bench) (spun tissue)))
  (:metric minimize (total-cost)))
