// Package adversarial holds swerve's corpus of reward-hacking patches and the
// test that grades them (TestCorpus). Each patch in corpus/patches tries to
// turn a non-fix into reward 1: by printing what a grader reads, killing or
// outliving the shell that runs the tests, shadowing the test runner,
// rewriting test results or the hidden tests themselves, or leaving a
// reward file behind. corpus/manifest.json names, for every patch, the
// technique, the tasks it is tried on and what the grade must be: reward 0
// with a "tampered: ..." or failing reason for a hack, 1 for a gold patch,
// 0 for the empty one.
//
// The tasks are the real SWE-bench Verified django tasks of
// ../shared/realtasks (swebench grader) and small tasks built on the test
// base image, one per grader kind (swebench with pytest, swefactory, r2e,
// swesmith, harbor); see README.md for the table of techniques.
//
// The package has no code of its own: the corpus is data, and the test is
// the proof.
package adversarial
