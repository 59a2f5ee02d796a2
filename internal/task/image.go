package task

import (
	"strings"
)

// SWEBenchImage returns the prebuilt image the SWE-bench harness names for an
// instance: swebench/sweb.eval.x86_64.<id>:latest, with "__" written as
// "_1776_" and everything lower-cased.
func SWEBenchImage(instanceID string) string {
	if instanceID == "" {
		return ""
	}
	id := strings.ReplaceAll(instanceID, "__", "_1776_")
	return strings.ToLower("swebench/sweb.eval.x86_64." + id + ":latest")
}

// SWEGymImage returns the image SWE-Gym instances are published under:
// xingyaoww/sweb.eval.x86_64.<id>:latest, with "__" written as "_s_" and
// everything lower-cased.
func SWEGymImage(instanceID string) string {
	if instanceID == "" {
		return ""
	}
	id := strings.ReplaceAll(instanceID, "__", "_s_")
	return strings.ToLower("xingyaoww/sweb.eval.x86_64." + id + ":latest")
}

// graderFromImage picks a grader from an image name the way upstream
// runtimes do (R2E-Gym grades "swebench" images with the SWE-bench rules,
// "swesmith" ones with SWE-smith's). Test-list graders are only chosen when
// the task has test lists to check; otherwise the name decides nothing.
func graderFromImage(image string, hasTests bool) Grader {
	image = strings.ToLower(image)
	switch {
	case image == "":
		return ""
	case strings.Contains(image, "swefactory"):
		return GraderSWEFactory
	case !hasTests:
		return ""
	case strings.Contains(image, "swesmith"):
		return GraderSWESmith
	case strings.Contains(image, "swebench"), strings.Contains(image, "sweb.eval"):
		return GraderSWEBench
	}
	return ""
}

// RepoLogParser returns the harness log parser of one of SWE-bench 4.x's
// Python repositories ("" for others), for rows that predate the
// log_parser column.
func RepoLogParser(repo string) string { return repoLogParser[repo] }

// repoLogParser names the harness log parser of the Python repositories of
// SWE-bench 4.x, for rows that predate the log_parser column.
var repoLogParser = map[string]string{
	"astropy/astropy":              "parse_log_astropy",
	"django/django":                "parse_log_django",
	"marshmallow-code/marshmallow": "parse_log_marshmallow",
	"matplotlib/matplotlib":        "parse_log_matplotlib",
	"mwaskom/seaborn":              "parse_log_seaborn",
	"pallets/flask":                "parse_log_flask",
	"psf/requests":                 "parse_log_requests",
	"pvlib/pvlib-python":           "parse_log_pvlib",
	"pydata/xarray":                "parse_log_xarray",
	"pydicom/pydicom":              "parse_log_pydicom",
	"pylint-dev/astroid":           "parse_log_astroid",
	"pylint-dev/pylint":            "parse_log_pylint",
	"pytest-dev/pytest":            "parse_log_pytest",
	"pyvista/pyvista":              "parse_log_pyvista",
	"scikit-learn/scikit-learn":    "parse_log_scikit",
	"sphinx-doc/sphinx":            "parse_log_sphinx",
	"sqlfluff/sqlfluff":            "parse_log_sqlfluff",
	"sympy/sympy":                  "parse_log_sympy",
}

// parserLanguage maps log parsers that are not Python's to a language.
var parserLanguage = map[string]string{
	"parse_log_ant":                    "java",
	"parse_log_gradle":                 "java",
	"parse_log_gradle_custom":          "java",
	"parse_log_maven":                  "java",
	"parse_log_cargo":                  "rust",
	"parse_log_gotest":                 "go",
	"parse_log_doctest":                "cpp",
	"parse_log_googletest":             "cpp",
	"parse_log_jq":                     "c",
	"parse_log_redis":                  "c",
	"parse_log_micropython_test":       "c",
	"parse_log_immutable_js":           "javascript",
	"parse_log_jest":                   "javascript",
	"parse_log_karma":                  "javascript",
	"parse_log_mocha":                  "javascript",
	"parse_log_tap":                    "javascript",
	"parse_log_vitest":                 "javascript",
	"parse_log_phpunit":                "php",
	"parse_log_jekyll":                 "ruby",
	"parse_log_minitest":               "ruby",
	"parse_log_rspec_transformed_json": "ruby",
	"parse_log_ruby_unit":              "ruby",
	"parse_log_cucumber":               "ruby",
}

// languageOf guesses a task's language from its log parser, its repository
// or its test names.
func languageOf(t *Task) string {
	if lang, ok := parserLanguage[t.LogParser]; ok {
		return lang
	}
	if _, ok := repoLogParser[t.Repo]; ok {
		return "python"
	}
	if strings.HasPrefix(t.LogParser, "parse_log_pytest") {
		return "python"
	}
	for _, name := range append(t.FailToPass[:len(t.FailToPass):len(t.FailToPass)], t.PassToPass...) {
		if strings.Contains(name, ".py::") || strings.HasSuffix(name, ".py") {
			return "python"
		}
	}
	return ""
}
