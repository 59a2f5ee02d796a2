package shim

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// killTree SIGKILLs process group pgid and every descendant of its leader,
// including those that moved to a process group or session of their own.
func killTree(pgid int) {
	if pgid <= 1 {
		return
	}
	// Collect descendants first: once the leader dies they are reparented
	// and the tree is lost.
	desc := descendants(pgid)
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	for _, pid := range desc {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// Anything in the group that was forked while we looked.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// descendants lists the pids below root, or in root's process group, from
// /proc. It returns nil where /proc is not readable.
func descendants(root int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := map[int]int{}
	group := map[int]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, pgrp, ok := statParents(pid)
		if !ok {
			continue
		}
		parent[pid], group[pid] = ppid, pgrp
	}
	var out []int
	for pid := range parent {
		if pid == root {
			continue
		}
		if group[pid] == root {
			out = append(out, pid)
			continue
		}
		for p, hops := parent[pid], 0; p > 1 && hops < 1000; p, hops = parent[p], hops+1 {
			if p == root {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// statParents reads the parent pid and process group of pid from
// /proc/PID/stat.
func statParents(pid int) (ppid, pgrp int, ok bool) {
	f, _, ok := procStat(pid)
	if !ok || len(f) < 3 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	return ppid, pgrp, err1 == nil && err2 == nil
}

// procStat returns the fields of /proc/PID/stat after the command name
// (state first), and the state letter.
func procStat(pid int) ([]string, string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, "", false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return nil, "", false
	}
	f := strings.Fields(s[i+2:])
	if len(f) == 0 {
		return nil, "", false
	}
	return f, f[0], true
}
