package reward

import (
	"strings"
	"testing"
)

const site = "/usr/lib/python3/site-packages"

func TestCheckPth(t *testing.T) {
	for _, c := range []struct {
		name, file, content string
		finders             []string
		bad                 string // a substring of the first finding, "" for none
	}{
		{"path into the tree", "easy-install.pth", "/testbed\n", nil, ""},
		{"subdirectory, comment, blank", "easy-install.pth", "# made by an installer\n\n/testbed/src\n", nil, ""},
		{"finder line", "__editable__.calc-1.0.pth", "import __editable___calc_1_0_finder; __editable___calc_1_0_finder.install()", []string{"__editable___calc_1_0_finder"}, ""},
		{"code line", "easy-install.pth", "/testbed\nimport calc.ops as o; o.add = lambda a, b: a + b\n", nil, "line 2 runs code"},
		{"finder line in easy-install.pth", "easy-install.pth", "import __editable___calc_1_0_finder; __editable___calc_1_0_finder.install()\n", nil, "runs code"},
		{"finder line with more code", "__editable__.calc-1.0.pth", "import __editable___calc_1_0_finder; __editable___calc_1_0_finder.install(); import os\n", nil, "runs code"},
		{"two names", "__editable__.calc-1.0.pth", "import __editable___calc_1_0_finder; other.install()\n", nil, "runs code"},
		{"import after a tab", "easy-install.pth", "import\tos\n", nil, "runs code"},
		{"indented import", "easy-install.pth", " import os\n", nil, "runs code"},
		{"path outside", "easy-install.pth", "/tmp/evil\n", nil, "outside the work tree"},
		{"relative path escaping", "easy-install.pth", "../../../../testbed/../tmp\n", nil, "outside the work tree"},
		{"prefix of the tree", "easy-install.pth", "/testbed2\n", nil, "outside the work tree"},
	} {
		t.Run(c.name, func(t *testing.T) {
			finders := map[string]bool{}
			got := checkPth(site+"/"+c.file, c.content, "/testbed", finders)
			switch {
			case c.bad == "" && len(got) > 0:
				t.Errorf("findings %q, want none", got)
			case c.bad != "" && (len(got) == 0 || !strings.Contains(got[0], c.bad)):
				t.Errorf("findings %q, want one with %q", got, c.bad)
			}
			for _, f := range c.finders {
				if !finders[f] {
					t.Errorf("finder %s not reported", f)
				}
			}
		})
	}
}

func TestCheckEggLink(t *testing.T) {
	for _, c := range []struct{ content, bad string }{
		{"/testbed\n.", ""},
		{"/testbed/src\n../", ""},
		{"/tmp/x\n.", "line 1"},
		{"/testbed\n../..", "line 2"},
		{"testbed\n.", "line 1"},
	} {
		got := checkEggLink(site+"/calc.egg-link", c.content, "/testbed")
		if c.bad == "" && len(got) > 0 || c.bad != "" && (len(got) == 0 || !strings.Contains(got[0], c.bad)) {
			t.Errorf("%q: findings %q, want %q", c.content, got, c.bad)
		}
	}
}

// fakeEditableWheel stands in for setuptools' module: a finder template
// in the same form (a format string with doubled braces for literal ones),
// its text written for this test.
const fakeEditableWheel = `"""Not setuptools: a module shaped like it for a test."""
import sys

_FINDER_TEMPLATE = """\
import sys

MAPPING = {mapping!r}
NAMESPACES = {namespaces!r}
PATH_PLACEHOLDER = {name!r} + ".__path_hook__"


def install():
    table = {{k: v for k, v in MAPPING.items()}}
    sys.meta_path.append(table)
"""


def _finder_template(name, mapping, namespaces):
    return _FINDER_TEMPLATE.format(name=name, mapping=mapping, namespaces=namespaces)
`

func finderText(mapping, namespaces, name string) string {
	return "import sys\n\nMAPPING = " + mapping + "\nNAMESPACES = " + namespaces + "\nPATH_PLACEHOLDER = " + name +
		" + \".__path_hook__\"\n\n\ndef install():\n    table = {k: v for k, v in MAPPING.items()}\n    sys.meta_path.append(table)\n"
}

func TestCheckFinder(t *testing.T) {
	tmpl := finderTemplate(fakeEditableWheel)
	if tmpl == nil {
		t.Fatal("finderTemplate: no template read")
	}
	file := site + "/__editable___calc_1_0_finder.py"
	for _, c := range []struct{ name, content, bad string }{
		{"generated", finderText("{'calc': '/testbed/calc'}", "{}", "'__editable__.calc-1.0.finder'"), ""},
		{"two packages, namespaces", finderText("{'a': '/testbed/a', 'b': '/testbed/src/b'}", "{'ns': ['/testbed/ns'], 'ns2': []}", "'n'"), ""},
		{"empty mapping", finderText("{}", "{}", "'n'"), ""},
		{"code appended", finderText("{'calc': '/testbed/calc'}", "{}", "'n'") + "import os\n", "is not setuptools' editable finder"},
		{"code in a field", finderText("{'calc': '/testbed/calc'}; import os", "{}", "'n'"), "not a plain table"},
		{"code in the name", finderText("{'calc': '/testbed/calc'}", "{}", "__import__('os') and 'n'"), "not a plain string"},
		{"mapping outside", finderText("{'calc': '/tmp/calc'}", "{}", "'n'"), "outside the work tree"},
		{"namespace outside", finderText("{}", "{'ns': ['/testbed/ns', '/tmp/ns']}", "'n'"), "outside the work tree"},
		{"body changed", strings.Replace(finderText("{}", "{}", "'n'"), "append", "insert", 1), "is not setuptools' editable finder"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := checkFinder(file, c.content, tmpl, "/testbed")
			if c.bad == "" && got != "" || c.bad != "" && !strings.Contains(got, c.bad) {
				t.Errorf("checkFinder: %q, want %q", got, c.bad)
			}
		})
	}
	if got := checkFinder(file, finderText("{}", "{}", "'n'"), nil, "/testbed"); !strings.Contains(got, "cannot be checked") {
		t.Errorf("no template: %q", got)
	}
	for _, src := range []string{"", "x = 1\n", "_FINDER_TEMPLATE = \"\"\"\\\nMAPPING = {mapping!r} }\n\"\"\"\n", "_FINDER_TEMPLATE = \"\"\"\\\nMAPPING = {mapping[0]}\n\"\"\"\n"} {
		if finderTemplate("\n"+src) != nil {
			t.Errorf("finderTemplate(%q): a template, want none", src)
		}
	}
}

func TestEditableKind(t *testing.T) {
	for name, want := range map[string]string{
		"easy-install.pth": "pth", "__editable__.calc-1.0.pth": "pth", "__editable___calc_1_0_finder.py": "finder",
		"calc.egg-link": "egg-link", "calc-dev.pth": "", "calc-1.0.dist-info": "", "calc.py": "",
	} {
		if got := editableKind(name); got != want {
			t.Errorf("editableKind(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestEntryPoints(t *testing.T) {
	got := entryPoints("[console_scripts]\ndjango-admin = django.core.management:execute_from_command_line\n\n[ pytest11 ]\n# a comment\nx=calc.plugin\n")
	if strings.Join(got["console_scripts"], ",") != "django-admin" || strings.Join(got["pytest11"], ",") != "x" {
		t.Errorf("entryPoints: %q", got)
	}
}

func TestAutoLoadedFile(t *testing.T) {
	for rel, want := range map[string]string{
		"tests/conftest.py": "yes", "conftest.py": "yes", "pytest.ini": "yes", "src/calc/x.pth": "yes", "sitecustomize.py": "yes",
		"tests/xor_lookups/apps.py": "yes", "tests/__init__.py": "yes", "calc/tests/__init__.py": "yes", "unittest.py": "yes",
		"calc/__init__.py": "", "calc/apps.py": "", "calc/_version.py": "", "build/lib/calc/tests/__init__.py": "", "build/conftest.py": "",
		"Django.egg-info/entry_points.txt": "plugins?", "docs/entry_points.txt": "", "tests/test_x.py": "",
	} {
		if got := autoLoadedFile(rel); got != want {
			t.Errorf("autoLoadedFile(%q) = %q, want %q", rel, got, want)
		}
	}
}
