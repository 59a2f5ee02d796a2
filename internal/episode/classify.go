package episode

import (
	"errors"
	"net/http"
	"strings"
	"syscall"

	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/sandbox"
)

// ErrorKind names what failed outside the model when a task ends in an
// error instead of a reward.
type ErrorKind string

// The kinds of infrastructure error.
const (
	KindImage  ErrorKind = "image"  // the task's image is missing or cannot be pulled
	KindEngine ErrorKind = "engine" // the container engine cannot be reached, or an engine call timed out
	KindBox    ErrorKind = "box"    // a box would not open, or died under a command (a killed container, a helper gone)
	KindDisk   ErrorKind = "disk"   // a disk is full
	KindLLM    ErrorKind = "llm"    // the model's provider failed past its retries (outage, 5xx, 429, transport, auth), or the model could not be set up
	KindGrader ErrorKind = "grader" // the grader could not grade a patch in a fresh box, or crashed
	KindTask   ErrorKind = "task"   // the task cannot be run as given (no gold patch, a repository that is not a git work tree)
)

// Phase is where an error arose; it decides what an error that names no
// known cause means.
type Phase int

const (
	// PhaseOpen: opening a box, the agent's or the grading one.
	PhaseOpen Phase = iota
	// PhaseSetup: preparing the agent's box before the model's first step.
	PhaseSetup
	// PhaseModel: a model call failed (the llm_error and context_limit
	// exits).
	PhaseModel
	// PhaseBox: a command, file or tool call in the agent's box failed, or
	// taking the patch did, after the model had acted (sandbox_error).
	PhaseBox
	// PhaseGrade: grading a patch in a fresh box from the task's image.
	PhaseGrade
	// PhaseGradeSame: grading in the agent's own box (--grade_in same),
	// whose state the model made.
	PhaseGradeSame
)

// Classify says whether err, met in phase, is a failure outside the model
// (true, with its kind: the task is recorded as an error and runs again) or
// the model's own doing (false: the task's reward is 0 with its reason).
//
// The sandbox sentinels decide first: ErrUnavailable and ErrTimeout are the
// engine's, ErrClosed a box that died, ErrNotFound on open a missing image;
// a full disk is a disk error wherever it shows. Then the phase: a model
// call's error is the provider's unless the request itself was at fault (a
// context overflow, a 400, 413 or 422, a scripted model out of replies); an
// unexplained failure opening or preparing a box, or of the grader in a
// fresh box, is infrastructure; in a box the model has used (its commands,
// taking its patch, grading in its box) it is the model's, since the model
// can break git or the tree itself.
func Classify(phase Phase, err error) (ErrorKind, bool) {
	if err == nil {
		return "", false
	}
	if IsDiskFull(err) || strings.Contains(strings.ToLower(err.Error()), "no space left on device") {
		return KindDisk, true
	}
	if phase == PhaseModel {
		return classifyModel(err)
	}
	switch {
	case errors.Is(err, sandbox.ErrUnavailable), errors.Is(err, sandbox.ErrTimeout):
		return KindEngine, true
	case errors.Is(err, sandbox.ErrClosed):
		return KindBox, true
	}
	switch phase {
	case PhaseOpen:
		if errors.Is(err, sandbox.ErrNotFound) {
			return KindImage, true
		}
		return KindBox, true
	case PhaseSetup:
		return KindTask, true
	case PhaseGrade:
		return KindGrader, true
	}
	return "", false
}

// classifyModel sorts a model call's error.
func classifyModel(err error) (ErrorKind, bool) {
	if errors.Is(err, llm.ErrContextWindow) || errors.Is(err, llm.ErrExhausted) {
		return "", false
	}
	var api *llm.APIError
	if errors.As(err, &api) {
		switch s := api.StatusCode; {
		case api.Retryable(), s == http.StatusUnauthorized, s == http.StatusPaymentRequired,
			s == http.StatusForbidden, s == http.StatusNotFound:
			return KindLLM, true
		case s >= 400 && s < 500:
			// The request the conversation made was refused: the model's.
			return "", false
		}
	}
	// Transport errors, timeouts, replies that cannot be read.
	return KindLLM, true
}

// IsDiskFull reports a full disk or an exhausted quota.
func IsDiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
