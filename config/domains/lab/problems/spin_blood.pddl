(define (problem spin-blood) (:domain lab)
  (:objects robot tech - agent
            fridge bench hallway centrifuge_room printer - station
            blood urine tissue - sample)
  (:init
    (= (total-cost) 0)
    (at robot bench) (at tech fridge) (free robot) (free tech)
    (sample-at blood fridge) (sample-at urine bench) (sample-at tissue fridge)
    (path fridge hallway) (path hallway fridge) (path bench hallway) (path hallway bench)
    (path centrifuge_room hallway) (path hallway centrifuge_room)
    (path printer hallway) (path hallway printer) (path fridge bench) (path bench fridge)
    (has-centrifuge centrifuge_room) (has-printer printer))
  (:goal (and (spun blood)))
  (:metric minimize (total-cost)))
