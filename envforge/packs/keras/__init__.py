"""The Keras 2.x pack: ``[keras]`` (keras.json's values, the back-end pack it runs on), its
pitfalls refused at lock time, the keras.json step (in the environment, KERAS_HOME and
KERAS_BACKEND set by activation), a probe that trains a model on the back-end against its
locked NumPy loss curve, doctor's rules, its knowledge (``keras.toml``, its own models).

Keras runs on a framework another pack provides (``[tensorflow]`` or ``[theano]``); that
pack's probe runs the core's kernels, this one's reports only Keras's part.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from envforge.packs.base import ModulePack, PackDefaults
from envforge.packs.keras.expect import KerasExpect
from envforge.packs.keras.section import SPEC_KEYS, KerasSection, keras_section

if TYPE_CHECKING:
    from envforge.doctor.facts import FrameworkConfig, SearchEntry
    from envforge.doctor.rules import Rule
    from envforge.envvars import EnvEdit
    from envforge.knowledge.models import UndeclaredImport
    from envforge.lockfile import Expectations
    from envforge.platforms import Platform
    from envforge.spec import PlatformSpec
    from envforge.steps.base import Step, StepContext

PROBE_SCRIPT = Path(__file__).parent / "probe.py"


class KerasPack(ModulePack, PackDefaults):
    name = "keras"
    display_name = "Keras"
    knowledge = ("keras",)
    section = KerasSection
    expect = KerasExpect
    probe: Path | None = PROBE_SCRIPT
    probe_modules = ("keras",)
    stack_names: Mapping[str, str] = {
        "keras": "keras", "h5py": "h5py", "keras-applications": "keras-applications",
        "keras-preprocessing": "keras-preprocessing",
    }
    doctor_variables = ("KERAS_BACKEND", "KERAS_HOME")
    doctor_packages = ("keras", "h5py")
    spec_keys: Mapping[str, tuple[str, str]] = SPEC_KEYS

    def kernel_device(self, pspec: PlatformSpec) -> tuple[str, str]:
        return "cpu", keras_section(pspec).floatx

    def steps(self, ctx: StepContext) -> Sequence[Step]:
        from envforge.packs.keras.kerasjson import KerasJsonStep

        return (KerasJsonStep(),)

    def env_edits(self, ctx: StepContext) -> Sequence[EnvEdit]:
        from envforge.envvars import EnvEdit
        from envforge.packs.keras.expect import keras_expect
        from envforge.packs.keras.kerasjson import in_env, keras_dir

        expect = keras_expect(ctx.lock.expect)
        if expect is None:
            return ()
        edits = [EnvEdit(name="KERAS_BACKEND", op="set", value=expect.backend)]
        if in_env(ctx):
            edits.insert(0, EnvEdit(name="KERAS_HOME", op="set", value=str(keras_dir(ctx))))
        return tuple(edits)

    def doctor_rules(self) -> tuple[Rule, ...]:
        from envforge.packs.keras.doctor_rules import config_rules, release_rules

        return (release_rules, config_rules)

    def doctor_observe(self, *, environ: Mapping[str, str], platform: Platform, cwd: Path,
                       python: str, path: Sequence[SearchEntry], prefix: Path | None,
                       expected: Mapping[str, str]) -> FrameworkConfig:
        from envforge.packs.keras.doctor_rules import observe

        return observe(environ, platform)

    def lock_settings(self, expect: Expectations) -> Mapping[str, str]:
        from envforge.packs.keras.expect import keras_expect

        table = keras_expect(expect)
        if table is None:
            return {}
        return {"backend": table.backend, "floatx": table.floatx, "keras_json": table.keras_json}

    def undeclared_imports(self, versions: Mapping[str, str]) -> Sequence[UndeclaredImport]:
        """The pitfalls' caps (Keras before 2.4 with h5py 3); a lock without Keras
        reads none of its knowledge."""
        from envforge.packs.keras.knowledge import keras_knowledge
        from envforge.packs.pitfalls import pack_caps

        return pack_caps(versions, {"keras": "keras"}, lambda: keras_knowledge().pitfalls)

    def error_hints(self) -> tuple[tuple[str, str], ...]:
        from envforge.packs.keras.knowledge import keras_knowledge
        from envforge.packs.pitfalls import error_hints

        return error_hints(keras_knowledge().pitfalls)


KERAS = KerasPack()
