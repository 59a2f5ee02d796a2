package run

import "github.com/swerve-dev/swerve/internal/episode"

// The error classification is package episode's, shared by every surface
// that runs an episode; these names keep run's callers as they were.

// ErrorKind names what failed outside the model (see episode.ErrorKind).
type ErrorKind = episode.ErrorKind

// The kinds of infrastructure error.
const (
	KindImage  = episode.KindImage
	KindEngine = episode.KindEngine
	KindBox    = episode.KindBox
	KindDisk   = episode.KindDisk
	KindLLM    = episode.KindLLM
	KindGrader = episode.KindGrader
	KindTask   = episode.KindTask
)

// Phase is where an error arose (see episode.Phase).
type Phase = episode.Phase

// The phases.
const (
	PhaseOpen      = episode.PhaseOpen
	PhaseSetup     = episode.PhaseSetup
	PhaseModel     = episode.PhaseModel
	PhaseBox       = episode.PhaseBox
	PhaseGrade     = episode.PhaseGrade
	PhaseGradeSame = episode.PhaseGradeSame
)

// Classify says whether err, met in phase, is a failure outside the model
// (see episode.Classify).
func Classify(phase Phase, err error) (ErrorKind, bool) { return episode.Classify(phase, err) }
