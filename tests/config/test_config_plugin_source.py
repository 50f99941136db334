"""What decides a plugin: its package's files, helpers included; an edited plugin is not silently kept in a process.
Before: a plugin package whose distance lived in a helper module (``plugins: [mylab.plugin]``, the value in
``mylab/kern.py``) kept its run key when the helper was edited, so finished runs of the old code were reused; a plugin
edited and loaded again in the same process kept its old registration while the key already hashed the new file."""

from __future__ import annotations

import sys

import pytest

from sdrlib.config import ConfigError, import_plugins, plugin_digest
from sdrlib.training.runkeys import plugins_digest


@pytest.fixture
def mylab(tmp_path, monkeypatch):
    pkg = tmp_path / "mylab_h64"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "kern.py").write_text("VALUE = 1\n")
    (pkg / "plugin.py").write_text("from mylab_h64.kern import VALUE\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield pkg
    for name in [m for m in sys.modules if m.startswith("mylab_h64")]:
        del sys.modules[name]


def test_editing_a_helper_module_of_a_plugin_package_changes_the_run_key(mylab):
    before = plugins_digest(["mylab_h64.plugin"])
    (mylab / "kern.py").write_text("VALUE = 2\n")
    after = plugins_digest(["mylab_h64.plugin"])
    assert before != after and set(after) == {"mylab_h64.plugin"}
    assert plugin_digest("mylab_h64") == plugin_digest("mylab_h64.plugin")   # the package's files, either way


def test_a_single_file_plugin_is_its_file(tmp_path):
    f = tmp_path / "toy_plugin_h64.py"
    f.write_text("X = 1\n")
    d1 = plugins_digest([str(f)])[str(f)]
    f.write_text("X = 2\n")
    assert plugins_digest([str(f)])[str(f)] != d1
    assert plugin_digest(str(tmp_path / "nope.py")) == "missing" and plugin_digest("no_such_module_h64") == "missing"


def test_a_plugin_edited_after_this_process_imported_it_is_refused(tmp_path, mylab):
    f = tmp_path / "edited_plugin_h64.py"
    f.write_text("X = 1\n")
    assert import_plugins([str(f)])[0].X == 1
    assert import_plugins([str(f)])[0].X == 1                 # unchanged: loaded again without a word
    f.write_text("X = 2\n")
    with pytest.raises(ConfigError, match="changed since this process imported it.*Restart"):
        import_plugins([str(f)])
    import_plugins(["mylab_h64.plugin"])
    (mylab / "kern.py").write_text("VALUE = 3\n")                # a helper of a module-name plugin
    with pytest.raises(ConfigError, match=r"plugins\[0\] = 'mylab_h64.plugin': the plugin's source changed"):
        import_plugins(["mylab_h64.plugin"])
