"""Small models compiled into stock .pt2 packages, shared by tests/python/test_pt2_import.py
(CPU) and tests/gpu/test_pt2.py (CUDA): two outputs over a dynamic batch, an int64 index
input, and a half-precision matmul that calls the cuBLAS fallbacks (addmm, mm)."""

from __future__ import annotations

import torch


class TwoOutputs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x, bias):
        h = torch.nn.functional.gelu(self.fc1(x))
        y = self.fc2(h) + bias
        return y, h.sum(dim=1)


class IntIndex(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.table = torch.nn.Parameter(torch.randn(10, 6))

    def forward(self, x, idx):
        return torch.tanh(x @ self.table[idx].t())


class HalfMatmul(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(64, 128)  # addmm
        self.proj = torch.nn.Parameter(torch.randn(128, 32) / 11.0)  # mm

    def forward(self, x):
        return torch.relu(self.fc(x)) @ self.proj
