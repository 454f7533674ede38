(define (problem label-urine) (:domain lab)
  (:objects robot tech - agent
            fridge bench hallway centrifuge_room printer - station
            blood urine tissue - sample)
  (:init
    (= (total-cost) 0)
    (at robot hallway) (at tech bench) (free robot) (free tech)
    (sample-at blood bench) (sample-at urine bench) (sample-at tissue fridge)
    (path fridge hallway) (path hallway fridge) (path bench hallway) (path hallway bench)
    (path centrifuge_room hallway) (path hallway centrifuge_room)
    (path printer hallway) (path hallway printer) (path fridge bench) (path bench fridge)
    (has-centrifuge centrifuge_room) (has-printer printer))
  (:goal (and (labelled urine)))
  (:metric minimize (total-cost)))
