"""The PyTorch 1.x pack: ``[torch]``, its rules refused at lock time (torchvision paired with
its torch, PyPI's ``pytorch`` placeholder, a platform PyPI has no wheel for, Pillow 7 and
NumPy's ABI), a probe that runs the core's kernels and its own checks (autograd, a training
loop, DataLoader workers, ``torch.jit.trace``, a torchvision model) and its rows, doctor's
rules (the wheel's kernel architectures against the host's GPUs), its knowledge
(``torch.toml``, read by this pack's own models).

Registered through the ``envforge.packs`` entry point, as a third-party pack would be;
heavy parts are imported when called, so the registry stays cheap to import.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from envforge.packs.base import ModulePack, PackDefaults
from envforge.packs.torch.expect import TorchExpect
from envforge.packs.torch.section import SPEC_KEYS, TorchSection

if TYPE_CHECKING:
    from envforge.doctor.facts import Expected, HostFacts
    from envforge.doctor.rules import Rule
    from envforge.knowledge.models import UndeclaredImport

PROBE_SCRIPT = Path(__file__).parent / "probe.py"


class TorchPack(ModulePack, PackDefaults):
    name = "torch"
    display_name = "PyTorch"
    knowledge = ("torch",)
    section = TorchSection
    expect = TorchExpect
    probe: Path | None = PROBE_SCRIPT
    probe_modules = ("numpy", "torch", "torchvision")
    stack_names: Mapping[str, str] = {
        "torch": "torch", "pytorch": "torch", "torchvision": "torchvision",
    }
    doctor_packages = ("torch", "torchvision", "pillow")
    spec_keys: Mapping[str, tuple[str, str]] = SPEC_KEYS

    def undeclared_imports(self, versions: Mapping[str, str]) -> Sequence[UndeclaredImport]:
        """The pitfalls' caps (torchvision < 0.5: pillow<7); a lock without PyTorch reads
        none of its knowledge."""
        from envforge.packs.pitfalls import pack_caps
        from envforge.packs.torch.knowledge import torch_knowledge

        return pack_caps(versions, self.stack_names, lambda: torch_knowledge().pitfalls)

    def doctor_rules(self) -> tuple[Rule, ...]:
        from envforge.packs.torch.doctor_rules import arch_rules, release_rules

        return (release_rules, arch_rules)

    def gpu_intended(self, facts: HostFacts, expected: Expected | None) -> bool:
        return expected is not None and expected.device.startswith("cuda") \
            and "torch" in expected.versions

    def error_hints(self) -> tuple[tuple[str, str], ...]:
        from envforge.packs.pitfalls import error_hints
        from envforge.packs.torch.compat import PAIR_HINT
        from envforge.packs.torch.knowledge import torch_knowledge

        return (*error_hints(torch_knowledge().pitfalls), PAIR_HINT)


TORCH = TorchPack()
