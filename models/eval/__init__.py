"""The text–motion evaluator and the evaluation table of the motion model."""
