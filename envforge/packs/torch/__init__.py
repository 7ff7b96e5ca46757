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

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envforge.packs.base import PackDefaults
from envforge.packs.torch.expect import TorchExpect
from envforge.packs.torch.section import SPEC_KEYS, TorchSection, torch_section

if TYPE_CHECKING:
    from envforge.compat import Pin
    from envforge.doctor.facts import Expected, HostFacts
    from envforge.doctor.rules import Rule
    from envforge.envvars import EnvEdit
    from envforge.lockfile import Expectations
    from envforge.packs.base import Report
    from envforge.spec import PlatformSpec
    from envforge.steps.base import Step, StepContext
    from envforge.verify import CheckRow

PROBE_SCRIPT = Path(__file__).parent / "probe.py"


class TorchPack(PackDefaults):
    name = "torch"
    section = TorchSection
    expect = TorchExpect
    implicit = False
    knowledge = ()  # its own file, read by envforge.packs.torch.knowledge
    probe: Path | None = PROBE_SCRIPT
    probe_modules = ("numpy", "torch", "torchvision")
    stack_names: Mapping[str, str] = {
        "torch": "torch", "pytorch": "torch", "torchvision": "torchvision",
    }
    doctor_packages = ("torch", "torchvision", "pillow")
    spec_keys: Mapping[str, tuple[str, str]] = SPEC_KEYS

    def compat_checks(self, pspec: PlatformSpec, pins: Mapping[str, Sequence[Pin]],
                      report: Report) -> None:
        from envforge.packs.torch.compat import compat_checks

        compat_checks(pspec, pins, report)

    def expectations(self, pspec: PlatformSpec, versions: Mapping[str, str]) -> TorchExpect:
        from envforge.packs.torch.expect import expectations

        return expectations(pspec, versions)

    def kernel_device(self, pspec: PlatformSpec) -> tuple[str, str]:
        section = torch_section(pspec)
        return section.device, section.float_x

    def steps(self, ctx: StepContext) -> Sequence[Step]:
        return ()

    def env_edits(self, ctx: StepContext) -> Sequence[EnvEdit]:
        return ()

    def probe_request(self, expect: Expectations) -> Mapping[str, Any]:
        from envforge.packs.torch.verify import probe_request

        return probe_request(expect)

    def verify_rows(self, report: Mapping[str, Any], expect: Expectations, *,
                    prefix: str | None, gpu_expected: bool) -> Iterable[CheckRow]:
        from envforge.packs.torch.verify import verify_rows

        return verify_rows(report, expect, prefix=prefix, gpu_expected=gpu_expected)

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
