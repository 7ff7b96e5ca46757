"""The TensorFlow 1.x pack: ``[tensorflow]``, its pitfalls refused at lock time (pins and
resolved versions), the variables activation sets, the probe (devices, kernels, the GPU
libraries its loader asks for) and its rows, doctor's rules, its knowledge
(``tensorflow.toml``, read by this pack's own models).

Heavy parts are imported when called, so the registry stays cheap to import.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from envforge.packs.base import ModulePack, PackDefaults
from envforge.packs.tensorflow.expect import TensorflowExpect
from envforge.packs.tensorflow.section import SPEC_KEYS, TensorflowSection

if TYPE_CHECKING:
    from envforge.doctor.facts import Expected, HostFacts
    from envforge.doctor.rules import Rule
    from envforge.envvars import EnvEdit
    from envforge.knowledge.models import UndeclaredImport
    from envforge.steps.base import StepContext

PROBE_SCRIPT = Path(__file__).parent / "probe.py"


class TensorflowPack(ModulePack, PackDefaults):
    name = "tensorflow"
    display_name = "TensorFlow"
    knowledge = ("tensorflow",)
    section = TensorflowSection
    expect = TensorflowExpect
    probe: Path | None = PROBE_SCRIPT
    probe_modules = ("numpy", "tensorflow")
    stack_names: Mapping[str, str] = {
        "tensorflow": "tensorflow", "tensorflow-gpu": "tensorflow",
        "tensorflow-cpu": "tensorflow", "protobuf": "protobuf", "gast": "gast",
        "tensorflow-estimator": "tensorflow-estimator", "tensorboard": "tensorboard",
    }
    doctor_packages = ("tensorflow", "protobuf", "gast")
    spec_keys: Mapping[str, tuple[str, str]] = SPEC_KEYS

    def env_edits(self, ctx: StepContext) -> Sequence[EnvEdit]:
        from envforge.envvars import EnvEdit
        from envforge.packs.tensorflow.expect import tensorflow_expect

        return tuple(EnvEdit(name=name, op="set", value=value) for name, value
                     in sorted(tensorflow_expect(ctx.lock.expect).variables.items()))

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

    def undeclared_imports(self, versions: Mapping[str, str]) -> Sequence[UndeclaredImport]:
        """The pitfalls' caps (tf.keras before 2.2 with h5py 3), ``tensorflow-gpu``
        read as ``tensorflow``; a lock without TensorFlow reads none of its knowledge."""
        from envforge.packs.pitfalls import pack_caps
        from envforge.packs.tensorflow.knowledge import tensorflow_knowledge

        return pack_caps(versions, self.stack_names, lambda: tensorflow_knowledge().pitfalls)

    def error_hints(self) -> tuple[tuple[str, str], ...]:
        from envforge.packs.pitfalls import error_hints
        from envforge.packs.tensorflow.knowledge import tensorflow_knowledge

        return error_hints(tensorflow_knowledge().pitfalls)


TENSORFLOW = TensorflowPack()
