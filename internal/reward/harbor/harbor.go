// Package harbor grades Harbor tasks the way Harbor's verifier does: the
// task's tests/ directory is copied into the box at /tests, tests/test.sh
// runs there under the verifier timeout, and the reward is what it left in
// /logs/verifier: reward.json (an object; its "reward" value, else its only
// number) or, without it, reward.txt (one number). A task whose test.sh
// writes neither gets reward 0 with the reason.
//
// Harbor's reading of the files, kept here:
//
//   - reward.json wins over reward.txt; it must be a JSON object, and only
//     its numeric values count (booleans do not);
//   - when reward.json has no "reward" value, a readable reward.txt
//     supplies it;
//   - reward.txt holds one number, as Python's float() reads it
//     (surrounding whitespace allowed);
//   - an empty or unreadable reward file is a failed verification.
//
// Harbor stops at a verification it cannot read; swerve gives reward 0 and
// says why. A reward of exactly 1 counts as resolved. swerve is stricter in
// one place: when reward.json has a "reward" and reward.txt exists too,
// they must agree (Harbor reads reward.json alone); disagreeing files are a
// failed verification.
//
// Run runs test.sh sealed, with the verifier directory emptied first, so
// no reward file from before the run counts; as reward.GradingUser where
// the box can (user.go), with the tests root's and read-only. The code
// under test still runs inside test.sh's test process and can write the
// reward files or end the runner early with status 0: for a test.sh that
// runs pytest on its test files, a reward above 0 also needs the grader's
// own record that every test of them passed (evidence.go), and a run that
// comes out 1 is run again with mutant canaries (canary.go).
package harbor

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// Where Harbor puts things in the box.
const (
	TestsDir    = "/tests"
	VerifierDir = "/logs/verifier"
	SolutionDir = "/solution"
	// TestScript is the verifier script, relative to the task directory and
	// to TestsDir's parent layout (tests/test.sh → /tests/test.sh).
	TestScript = "test.sh"
	// RewardJSON and RewardText are the files test.sh leaves in VerifierDir.
	RewardJSON = "reward.json"
	RewardText = "reward.txt"
	// ExpectedTests is a file of tests/ that names the tests whose results
	// the grader requires in test.sh's output (see evidence.go); `swerve
	// convert harbor` writes it.
	ExpectedTests = "expected_tests.json"
)

// Result is one verification.
type Result struct {
	InstanceID string  `json:"instance_id"`
	Reward     float64 `json:"reward"`
	Resolved   bool    `json:"resolved"`
	// Rewards are the numeric values of reward.json (with "reward" from
	// reward.txt when reward.json lacks it), or {"reward": n} from
	// reward.txt alone.
	Rewards map[string]float64 `json:"rewards,omitempty"`
	// Source is the file the reward was read from.
	Source string `json:"source,omitempty"`
	// ExitCode is test.sh's exit status (-1 when it did not finish).
	ExitCode int    `json:"exit_code"`
	Reason   string `json:"reason"`
	// Evidence says what the grader's own record of the test run held
	// ("<n> of <m> tests passed in the test output"), or why it was not
	// checked (see evidence.go); TestsPassed is n.
	Evidence    string `json:"evidence,omitempty"`
	TestsPassed int    `json:"tests_passed,omitempty"`
	// ConditionalSkips name the tests ("file::test") this run skipped or
	// xfailed under a condition of their own marks; a gold run's are the
	// only such skips another run may have (evidence.go).
	ConditionalSkips []string `json:"conditional_skips,omitempty"`
	// EvidenceChecked: the record was read (Evidence is not "not
	// checked: ...").
	EvidenceChecked bool `json:"-"`
}

// Files is what the verifier directory held after test.sh ran; nil means
// the file was not there.
type Files struct {
	JSON []byte
	Text []byte
}

// ReadReward reads the reward out of the verifier's files as Harbor does.
// r's InstanceID and ExitCode are kept; the rest is filled in.
func ReadReward(r *Result, f Files) {
	r.Reward, r.Resolved, r.Rewards, r.Source = 0, false, nil, ""
	switch {
	case f.JSON != nil:
		r.Source = RewardJSON
		rewards, err := parseRewardJSON(f.JSON)
		if err != nil {
			r.Reason = err.Error()
			return
		}
		if v, ok := rewards["reward"]; ok && f.Text != nil {
			// Both files name the reward: they must agree. A test that
			// writes one of them itself leaves them disagreeing.
			if tv, err := parseRewardText(f.Text); err != nil || tv != v {
				r.Rewards = rewards
				r.Reason = fmt.Sprintf("%s and %s disagree: reward %s and %s", RewardJSON, RewardText,
					strconv.FormatFloat(v, 'g', -1, 64), strings.TrimSpace(string(f.Text)))
				return
			}
		}
		if _, ok := rewards["reward"]; !ok && f.Text != nil {
			if v, err := parseRewardText(f.Text); err == nil {
				rewards["reward"] = v
			}
		}
		r.Rewards = rewards
		v, ok := rewards["reward"]
		if !ok {
			switch len(rewards) {
			case 0:
				r.Reason = RewardJSON + " holds no number"
				return
			case 1:
				for _, only := range rewards {
					v = only
				}
			default:
				keys := make([]string, 0, len(rewards))
				for k := range rewards {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				r.Reason = fmt.Sprintf("%s holds %d numbers (%s) and none is named reward", RewardJSON, len(keys), strings.Join(keys, ", "))
				return
			}
		}
		r.Reward = v
	case f.Text != nil:
		r.Source = RewardText
		v, err := parseRewardText(f.Text)
		if err != nil {
			r.Reason = err.Error()
			return
		}
		r.Rewards = map[string]float64{"reward": v}
		r.Reward = v
	default:
		r.Reason = "no reward file: test.sh wrote neither " + RewardJSON + " nor " + RewardText
		return
	}
	r.Resolved = r.Reward == 1
	if r.Resolved {
		r.Reason = "resolved"
	} else {
		r.Reason = fmt.Sprintf("tests failed: reward %s from %s", strconv.FormatFloat(r.Reward, 'g', -1, 64), r.Source)
	}
}

func parseRewardJSON(b []byte) (map[string]float64, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%s is empty", RewardJSON)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s is not JSON: %v", RewardJSON, err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is not a JSON object", RewardJSON)
	}
	out := map[string]float64{}
	for k, v := range obj {
		if n, ok := v.(float64); ok {
			out[k] = n
		}
	}
	return out, nil
}

func parseRewardText(b []byte) (float64, error) {
	if len(b) == 0 {
		return 0, fmt.Errorf("%s is empty", RewardText)
	}
	v, ok := pyFloat(string(b))
	if !ok {
		s := strings.TrimSpace(string(b))
		if len(s) > 40 {
			s = s[:40] + "…"
		}
		return 0, fmt.Errorf("%s does not hold a number: %q", RewardText, s)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s holds %v, not a finite number", RewardText, v)
	}
	return v, nil
}

// pyFloat parses s as Python's float() does a string: surrounding
// whitespace, an optional sign, decimal digits (single underscores allowed
// between digits), a fraction and an exponent, or inf/infinity/nan.
func pyFloat(s string) (float64, bool) {
	s = strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) })
	if s == "" {
		return 0, false
	}
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 {
		return 0, false
	}
	switch strings.ToLower(body) {
	case "inf", "infinity", "nan":
		v, err := strconv.ParseFloat(s, 64)
		return v, err == nil
	}
	// Only decimal forms: Go would also take hex floats.
	clean := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9', c == '.', c == '+', c == '-', c == 'e', c == 'E':
			clean = append(clean, c)
		case c == '_' && i > 0 && i+1 < len(s) && isDigit(s[i-1]) && isDigit(s[i+1]):
		default:
			return 0, false
		}
	}
	v, err := strconv.ParseFloat(string(clean), 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return v, true // Python gives inf or 0 too
		}
		return 0, false
	}
	return v, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
