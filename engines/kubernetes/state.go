package kubernetes

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/engines/kubernetes/kubeapi"
)

// jobFinished reports whether a Job has its final condition (Complete or
// Failed: the Job controller sets them once every pod has ended).
func jobFinished(j *kubeapi.Job) bool {
	return kubeapi.FindCondition(j.Status.Conditions, "Complete") != nil || kubeapi.FindCondition(j.Status.Conditions, "Failed") != nil
}

// podsOf returns the pods of one completion index (all of them for nil),
// oldest first.
func podsOf(pods []*kubeapi.Pod, index *int) []*kubeapi.Pod {
	var out []*kubeapi.Pod
	for _, p := range pods {
		if index != nil && p.Metadata.Annotations[indexAnn] != strconv.Itoa(*index) {
			continue
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, k int) bool {
		a, b := out[i].Metadata.CreationTimestamp, out[k].Metadata.CreationTimestamp
		if a != nil && b != nil && !a.Equal(*b) {
			return a.Before(*b)
		}
		return out[i].Metadata.Name < out[k].Metadata.Name
	})
	return out
}

// lastPod is the pod whose outcome counts: the one that succeeded, else
// the newest.
func lastPod(pods []*kubeapi.Pod, index *int) *kubeapi.Pod {
	ps := podsOf(pods, index)
	for i := len(ps) - 1; i >= 0; i-- {
		if ps[i].Status.Phase == "Succeeded" {
			return ps[i]
		}
	}
	if len(ps) == 0 {
		return nil
	}
	return ps[len(ps)-1]
}

// terminated returns the bench container's terminated state, if any.
func terminated(p *kubeapi.Pod) *kubeapi.ContainerTerminated {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Terminated != nil {
			return cs.State.Terminated
		}
	}
	return nil
}

// podSummary is one line about a pod: phase, reason, container state.
func podSummary(p *kubeapi.Pod) string {
	parts := []string{p.Status.Phase}
	if p.Status.Reason != "" || p.Status.Message != "" {
		parts = append(parts, joinNonEmpty(": ", p.Status.Reason, p.Status.Message))
	}
	for _, cs := range p.Status.ContainerStatuses {
		switch {
		case cs.State.Waiting != nil:
			parts = append(parts, "waiting: "+joinNonEmpty(": ", cs.State.Waiting.Reason, cs.State.Waiting.Message))
		case cs.State.Terminated != nil:
			t := cs.State.Terminated
			s := fmt.Sprintf("terminated: exit code %d", t.ExitCode)
			if t.Reason != "" {
				s += ", " + t.Reason
			}
			if m := strings.TrimSpace(t.Message); m != "" {
				if len(m) > 300 {
					m = "..." + m[len(m)-300:]
				}
				s += ": " + m
			}
			parts = append(parts, s)
		}
	}
	if c := kubeapi.FindCondition(p.Status.Conditions, "DisruptionTarget"); c != nil {
		parts = append(parts, "disrupted: "+joinNonEmpty(": ", c.Reason, c.Message))
	}
	if p.Metadata.DeletionTimestamp != nil {
		parts = append(parts, "terminating")
	}
	return joinNonEmpty("; ", parts...)
}

// failedPodReason says why a pod failed: OOMKilled, an exit code, a
// reason of the kubelet.
func failedPodReason(p *kubeapi.Pod) string {
	t := terminated(p)
	if t != nil && t.Reason == "OOMKilled" {
		return fmt.Sprintf("OOMKilled: the container ran out of memory (exit code %d)", t.ExitCode)
	}
	return podSummary(p)
}

// stateOf maps what the watch knows about a Job (and its pods) to a
// State. index selects one pilot of an Indexed Job.
func stateOf(v view, index *int, maxDisruptions int) engines.State {
	if v.job == nil {
		switch {
		case v.gone:
			return engines.State{Phase: engines.Failed, Reason: "the Job was deleted before it ended (not by this bench: kubectl delete, a namespace deletion or a TTL)"}
		case !v.synced:
			return engines.State{Phase: engines.Queued, Progress: "not yet listed"}
		}
		return engines.State{Phase: engines.Lost, Reason: "Kubernetes has no such Job (deleted, or removed by its TTL)"}
	}
	j := v.job
	st := engines.State{}
	if j.Status.StartTime != nil {
		st.Started = *j.Status.StartTime
	}
	pods := podsOf(v.pods, index)
	progress := []string{fmt.Sprintf("job active=%d succeeded=%d failed=%d", j.Status.Active, j.Status.Succeeded, j.Status.Failed)}
	for _, p := range pods {
		progress = append(progress, p.Metadata.Name+" "+podSummary(p))
	}
	st.Progress = strings.Join(progress, "; ")
	if index != nil {
		return pilotState(st, j, pods)
	}
	last := lastPod(v.pods, nil)
	if c := kubeapi.FindCondition(j.Status.Conditions, "Complete"); c != nil {
		st.Phase = engines.Done
		st.Ended = endTime(j, c)
		return st
	}
	if c := kubeapi.FindCondition(j.Status.Conditions, "Failed"); c != nil {
		st.Ended = endTime(j, c)
		st.Phase = engines.Failed
		if c.Reason == "DeadlineExceeded" {
			st.Phase = engines.TimedOut
		}
		st.Reason = joinNonEmpty(": ", c.Reason, c.Message)
		if last != nil {
			st.Reason = joinNonEmpty("; ", st.Reason, "pod "+last.Metadata.Name+": "+failedPodReason(last))
		}
		return st
	}
	if n := len(v.disrupted); n > maxDisruptions {
		sort.Strings(v.disrupted)
		st.Phase = engines.Failed
		st.Reason = fmt.Sprintf("the Job's pods were evicted or preempted %d times (max_disruptions %d): %s", n, maxDisruptions, strings.Join(v.disrupted, "; "))
		return st
	}
	// A pod that cannot start will not start by waiting: fail at once.
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && immediateErrors[w.Reason] {
				st.Phase = engines.Failed
				st.Reason = fmt.Sprintf("pod %s cannot start its container: %s", p.Metadata.Name, joinNonEmpty(": ", w.Reason, w.Message))
				return st
			}
		}
	}
	if j.Spec.Suspend != nil && *j.Spec.Suspend {
		st.Phase = engines.Queued
		return st
	}
	st.Phase = engines.Queued
	if last != nil && (last.Status.Phase == "Running" || last.Status.Phase == "Succeeded" || last.Status.Phase == "Failed") {
		st.Phase = engines.Running
		if st.Started.IsZero() && last.Status.StartTime != nil {
			st.Started = *last.Status.StartTime
		}
	}
	return st
}

// pilotState is the state of one index of a pilots' Indexed Job.
func pilotState(st engines.State, j *kubeapi.Job, pods []*kubeapi.Pod) engines.State {
	var last *kubeapi.Pod
	if len(pods) > 0 {
		last = pods[len(pods)-1]
	}
	switch {
	case last != nil && last.Status.Phase == "Succeeded":
		st.Phase = engines.Done
	case last != nil && last.Status.Phase == "Failed" && kubeapi.FindCondition(last.Status.Conditions, "DisruptionTarget") == nil:
		st.Phase, st.Reason = engines.Failed, "pod "+last.Metadata.Name+": "+failedPodReason(last)
	case kubeapi.FindCondition(j.Status.Conditions, "Failed") != nil:
		c := kubeapi.FindCondition(j.Status.Conditions, "Failed")
		st.Phase, st.Reason = engines.Failed, joinNonEmpty(": ", c.Reason, c.Message)
		if c.Reason == "DeadlineExceeded" {
			st.Phase = engines.TimedOut
		}
	case kubeapi.FindCondition(j.Status.Conditions, "Complete") != nil:
		st.Phase = engines.Done
	case last != nil && last.Status.Phase == "Running":
		st.Phase = engines.Running
	default:
		st.Phase = engines.Queued
	}
	return st
}

func endTime(j *kubeapi.Job, c *kubeapi.Condition) time.Time {
	if j.Status.CompletionTime != nil {
		return *j.Status.CompletionTime
	}
	if c.LastTransitionTime != nil {
		return *c.LastTransitionTime
	}
	return time.Time{}
}

// disruptionWord says how a pod was disrupted.
func disruptionWord(c *kubeapi.Condition) string {
	switch c.Reason {
	case "PreemptionByScheduler", "PreemptionByKubeScheduler":
		return "preempted (" + c.Reason + ")"
	case "EvictionByEvictionAPI", "TerminationByKubelet", "DeletionByTaintManager", "DeletionByPodGC":
		return "evicted (" + c.Reason + ")"
	}
	return "disrupted (" + joinNonEmpty(": ", c.Reason, c.Message) + ")"
}
