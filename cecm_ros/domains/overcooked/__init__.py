"""The paper's Overcooked: a grid kitchen, macro actions, PUCT MCTS (and a Q-learning
baseline)."""
