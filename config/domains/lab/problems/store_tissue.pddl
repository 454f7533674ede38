(define (problem store-tissue) (:domain lab)
  (:objects robot tech - agent
            fridge bench hallway centrifuge_room printer - station
            blood urine tissue - sample)
  (:init
    (= (total-cost) 0)
    (at robot fridge) (at tech centrifuge_room) (free robot) (free tech)
    (sample-at blood centrifuge_room) (sample-at urine printer) (sample-at tissue bench)
    (path fridge hallway) (path hallway fridge) (path bench hallway) (path hallway bench)
    (path centrifuge_room hallway) (path hallway centrifuge_room)
    (path printer hallway) (path hallway printer) (path fridge bench) (path bench fridge)
    (has-centrifuge centrifuge_room) (has-printer printer))
  (:goal (and (spun tissue) (sample-at tissue fridge)))
  (:metric minimize (total-cost)))
