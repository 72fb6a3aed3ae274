"""zoo_report.compare's rules, on made-up outputs (no export): the tolerance against eager, and
for low-precision runs the float32-model rule that accepts an output only as far from that
model as eager's own."""

import torch

import zoo_report


def _const(*values):
    return lambda inputs: [torch.tensor(values, dtype=torch.float32)]


def test_within_tolerance_passes_and_over_it_fails():
    inputs = [(torch.zeros(2),)]
    worst, problems = zoo_report.compare(_const(1.0, 2.0), inputs, _const(1.0, 2.001), 1e-3)
    assert problems == [] and abs(worst - 5e-4) < 1e-6
    worst, problems = zoo_report.compare(_const(1.0, 2.0), inputs, _const(1.0, 2.1), 1e-3)
    assert len(problems) == 1 and "relative error 0.05" in problems[0]


def test_float32_rule_accepts_only_outputs_as_close_to_the_float32_model_as_eager():
    inputs = [(torch.zeros(2),)]
    exact = _const(1.0, 2.0)
    # Eager is 0.1 from the float32 model, Kiln 0.1 the other way: 0.2 apart, yet as accurate.
    notes: list[str] = []
    _, problems = zoo_report.compare(_const(1.0, 2.2), inputs, _const(1.0, 1.8), 2e-2, exact, notes)
    assert problems == [] and len(notes) == 1 and "float32 model" in notes[0]
    # Eager is exact, Kiln 0.1 off: Kiln is the less accurate one.
    notes = []
    _, problems = zoo_report.compare(_const(1.0, 2.0), inputs, _const(1.0, 2.2), 2e-2, exact, notes)
    assert len(problems) == 1 and "float32 model" in problems[0] and notes == []


def test_non_finite_and_shape_problems_are_never_excused():
    inputs = [(torch.zeros(2),)]
    _, problems = zoo_report.compare(_const(1.0, 2.0), inputs, _const(1.0, float("nan")), 2e-2, _const(1.0, 2.0))
    assert problems and "non-finite" in problems[0]
    _, problems = zoo_report.compare(_const(1.0, 2.0), inputs, _const(1.0, 2.0, 3.0), 2e-2, _const(1.0, 2.0))
    assert problems and "eager" in problems[0]


def test_float64_rule_for_float32_runs_uses_the_given_slack():
    inputs = [(torch.zeros(2),)]
    exact = lambda inputs: [torch.tensor([1.0, 2.0], dtype=torch.float64)]  # noqa: E731
    # Eager 0.01 from the float64 model, Kiln 0.005 the other way: 0.015 apart, and more accurate.
    notes: list[str] = []
    _, problems = zoo_report.compare(_const(1.0, 2.02), inputs, _const(1.0, 1.99), 1e-3, exact, notes, slack=1e-3)
    assert problems == [] and len(notes) == 1 and "float64 model" in notes[0]
    # Eager exact, Kiln 0.004 off: over the tolerance and over 1.5x eager's distance + the slack.
    _, problems = zoo_report.compare(_const(1.0, 2.0), inputs, _const(1.0, 2.008), 1e-3, exact, [], slack=1e-3)
    assert len(problems) == 1 and "float64 model" in problems[0]


def test_an_output_as_far_off_in_inductors_own_compile_is_reported_as_inductors():
    inputs = [(torch.zeros(2),)]
    exact = lambda inputs: [torch.tensor([1.0, 2.0], dtype=torch.float64)]  # noqa: E731
    # Eager exact, Kiln 0.01 off; torch.compile of the model 0.01 off the same way: Inductor's numerics.
    inductor_notes: list[str] = []
    _, problems = zoo_report.compare(_const(1.0, 2.0), inputs, _const(1.0, 2.02), 1e-3, exact, [], slack=1e-3,
                                     inductor=_const(1.0, 2.02), inductor_notes=inductor_notes)
    assert problems == [] and len(inductor_notes) == 1 and "torch.compile" in inductor_notes[0]
    # torch.compile matches the model: Kiln's difference is its own.
    inductor_notes = []
    _, problems = zoo_report.compare(_const(1.0, 2.0), inputs, _const(1.0, 2.02), 1e-3, exact, [], slack=1e-3,
                                     inductor=_const(1.0, 2.0), inductor_notes=inductor_notes)
    assert len(problems) == 1 and inductor_notes == []
