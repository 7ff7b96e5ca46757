"""The TensorFlow 1.x pack: ``[tensorflow]``, its pitfalls refused at lock time (pins and
resolved versions), the variables activation sets, the probe (devices, kernels, the GPU
libraries its loader asks for) and its rows, doctor's rules, its knowledge
(``tensorflow.toml``, read by this pack's own models).

Heavy parts are imported when called, so the registry stays cheap to import.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envforge.packs.base import PackDefaults
from envforge.packs.tensorflow.expect import TensorflowExpect
from envforge.packs.tensorflow.section import SPEC_KEYS, TensorflowSection, tensorflow_section

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


class TensorflowPack(PackDefaults):
    name = "tensorflow"
    section = TensorflowSection
    expect = TensorflowExpect
    implicit = False
    knowledge = ()  # its own file, read by envforge.packs.tensorflow.knowledge
    probe: Path | None = PROBE_SCRIPT
    probe_modules = ("numpy", "tensorflow")
    stack_names: Mapping[str, str] = {
        "tensorflow": "tensorflow", "tensorflow-gpu": "tensorflow",
        "tensorflow-cpu": "tensorflow", "protobuf": "protobuf", "gast": "gast",
        "tensorflow-estimator": "tensorflow-estimator", "tensorboard": "tensorboard",
    }
    doctor_packages = ("tensorflow", "protobuf", "gast")
    spec_keys: Mapping[str, tuple[str, str]] = SPEC_KEYS

    def compat_checks(self, pspec: PlatformSpec, pins: Mapping[str, Sequence[Pin]],
                      report: Report) -> None:
        from envforge.packs.tensorflow.compat import compat_checks

        compat_checks(pspec, pins, report)

    def expectations(self, pspec: PlatformSpec,
                     versions: Mapping[str, str]) -> TensorflowExpect:
        from envforge.packs.tensorflow.expect import expectations

        return expectations(pspec, versions)

    def kernel_device(self, pspec: PlatformSpec) -> tuple[str, str]:
        section = tensorflow_section(pspec)
        return section.device, section.float_x

    def steps(self, ctx: StepContext) -> Sequence[Step]:
        return ()

    def env_edits(self, ctx: StepContext) -> Sequence[EnvEdit]:
        from envforge.envvars import EnvEdit
        from envforge.packs.tensorflow.expect import tensorflow_expect

        return tuple(EnvEdit(name=name, op="set", value=value) for name, value
                     in sorted(tensorflow_expect(ctx.lock.expect).variables.items()))

    def probe_request(self, expect: Expectations) -> Mapping[str, Any]:
        from envforge.packs.tensorflow.verify import probe_request

        return probe_request(expect)

    def verify_rows(self, report: Mapping[str, Any], expect: Expectations, *,
                    prefix: str | None, gpu_expected: bool) -> Iterable[CheckRow]:
        from envforge.packs.tensorflow.verify import verify_rows

        return verify_rows(report, expect, prefix=prefix, gpu_expected=gpu_expected)

    def doctor_rules(self) -> tuple[Rule, ...]:
        from envforge.packs.tensorflow.doctor_rules import library_rules, release_rules

        return (release_rules, library_rules)

    def gpu_intended(self, facts: HostFacts, expected: Expected | None) -> bool:
        from envforge.packs.tensorflow.doctor_rules import gpu_intended

        return gpu_intended(facts, expected)

    def distribution_package(self, name: str) -> str | None:
        from packaging.utils import canonicalize_name

        from envforge.packs.tensorflow.knowledge import aliases

        return aliases().get(canonicalize_name(name))

    def error_hints(self) -> tuple[tuple[str, str], ...]:
        from envforge.packs.pitfalls import error_hints
        from envforge.packs.tensorflow.knowledge import tensorflow_knowledge

        return error_hints(tensorflow_knowledge().pitfalls)


TENSORFLOW = TensorflowPack()
