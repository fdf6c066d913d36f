package clonesetutil

import (
	"math"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/podutil"
)

// UpdateOrder sorts candidates, indexes into pods, into the order in which a rolling update
// takes them:
//  1. the order upstream controllers pick pods to act on: unscheduled, Pending < Unknown <
//     Running, not ready, ready for a shorter time, more restarts, newer;
//  2. then, with a priority strategy, by priority (stable): the higher sum of the weights
//     whose selector matches the pod's labels; or, with order priority, by the first
//     ordered key the pod carries (earlier keys first; a pod carrying none comes before
//     them all, as in OpenKruise), and for one key by the integer its value ends with,
//     higher first;
//  3. then, with a scatter strategy, spread: see scatter;
//  4. finally pods in PreparingUpdate first (stable), so that an update a hook held is
//     finished before others start.
func UpdateOrder(strategy *appsv1beta1.RollingUpdateCloneSetStrategy, pods []*corev1.Pod, candidates []int) []int {
	sorted := append([]int(nil), candidates...)
	sort.Stable(byActivity{indexes: sorted, ranked: rankedCandidates(pods, sorted)})
	if strategy != nil {
		if p := strategy.PriorityStrategy; p != nil && (len(p.WeightPriority) > 0 || len(p.OrderPriority) > 0) {
			keys := make(map[int]priorityKey, len(sorted))
			for _, i := range sorted {
				keys[i] = priorityOf(p, pods[i].Labels)
			}
			sort.SliceStable(sorted, func(a, b int) bool { return keys[sorted[a]].before(keys[sorted[b]]) })
		}
		if len(strategy.ScatterStrategy) > 0 {
			sorted = scatter(strategy.ScatterStrategy, pods, sorted)
		}
	}
	sort.SliceStable(sorted, func(a, b int) bool {
		return LifecycleState(pods[sorted[a]]) == appsv1beta1.LifecycleStatePreparingUpdate &&
			LifecycleState(pods[sorted[b]]) != appsv1beta1.LifecycleStatePreparingUpdate
	})
	return sorted
}

// rankedCandidates returns the candidate pods as podutil.RankedPods that order them as
// upstream's controllers order active pods: no ranks, no deletion cost, plain times.
func rankedCandidates(pods []*corev1.Pod, candidates []int) podutil.RankedPods {
	ranked := podutil.RankedPods{Pods: make([]*corev1.Pod, len(candidates)), Rank: make([]int, len(candidates)), IgnoreDeletionCost: true}
	for i, index := range candidates {
		ranked.Pods[i] = pods[index]
	}
	return ranked
}

// byActivity sorts candidate indexes by the order of the pods they point at.
type byActivity struct {
	indexes []int
	ranked  podutil.RankedPods
}

func (s byActivity) Len() int           { return len(s.indexes) }
func (s byActivity) Less(i, j int) bool { return s.ranked.Less(i, j) }
func (s byActivity) Swap(i, j int) {
	s.indexes[i], s.indexes[j] = s.indexes[j], s.indexes[i]
	s.ranked.Swap(i, j)
}

// priorityKey is a pod's place under a priority strategy: its weight (weight priority), or
// the level of its first ordered key and the order its value gives (order priority).
type priorityKey struct {
	weighted     bool
	weight       int64
	level, order int64
}

func (k priorityKey) before(other priorityKey) bool {
	if k.weighted {
		return k.weight > other.weight
	}
	if k.level != other.level {
		return k.level < other.level
	}
	return k.order > other.order
}

func priorityOf(p *appsv1beta1.UpdatePriorityStrategy, podLabels map[string]string) priorityKey {
	if len(p.WeightPriority) > 0 {
		key := priorityKey{weighted: true}
		for _, term := range p.WeightPriority {
			selector, err := metav1.LabelSelectorAsSelector(&term.MatchSelector)
			if err != nil {
				continue
			}
			if selector.Matches(labels.Set(podLabels)) {
				key.weight += int64(term.Weight)
			}
		}
		return key
	}
	for i, term := range p.OrderPriority {
		if value, ok := podLabels[term.OrderedKey]; ok {
			return priorityKey{level: int64(i), order: trailingInteger(value)}
		}
	}
	return priorityKey{level: -1}
}

// trailingInteger returns the integer the digits at the end of v spell, 0 when there are
// none or they overflow.
func trailingInteger(v string) int64 {
	start := len(v)
	for start > 0 && v[start-1] >= '0' && v[start-1] <= '9' {
		start--
	}
	if start == len(v) {
		return 0
	}
	n, err := strconv.ParseInt(v[start:], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// scatter spreads the pods matching each scatter term evenly among the others, one term
// after the other: with several terms, the terms some candidate matches, the most matched
// first; with one, that term as given.
func scatter(strategy appsv1beta1.UpdateScatterStrategy, pods []*corev1.Pod, candidates []int) []int {
	if len(candidates) <= 1 {
		return candidates
	}
	for _, term := range scatterTerms(strategy, pods, candidates) {
		candidates = scatterTerm(term, pods, candidates)
	}
	return candidates
}

// scatterTerms returns the terms to scatter by, in the order they are applied.
func scatterTerms(strategy appsv1beta1.UpdateScatterStrategy, pods []*corev1.Pod, candidates []int) []appsv1beta1.UpdateScatterTerm {
	if len(strategy) == 1 {
		return strategy
	}
	var terms []appsv1beta1.UpdateScatterTerm
	matched := map[appsv1beta1.UpdateScatterTerm]int{}
	for _, term := range strategy {
		for _, i := range candidates {
			if value, ok := pods[i].Labels[term.Key]; ok && value == term.Value {
				if matched[term] == 0 {
					terms = append(terms, term)
				}
				matched[term]++
			}
		}
	}
	sort.SliceStable(terms, func(a, b int) bool { return matched[terms[a]] > matched[terms[b]] })
	return terms
}

// scatterTerm reorders candidates so that those matching term are spread among the others:
// the last matching candidate is put last, the rest alternate in groups sized after how
// matching and other pods are mixed among all of pods (or among the candidates, when the
// candidates are the denser mix), leftovers at the end. With at most one candidate on
// either side there is nothing to spread.
func scatterTerm(term appsv1beta1.UpdateScatterTerm, pods []*corev1.Pod, candidates []int) []int {
	var matching, others []int
	for _, i := range candidates {
		if pods[i].Labels[term.Key] == term.Value {
			matching = append(matching, i)
		} else {
			others = append(others, i)
		}
	}
	if len(matching) <= 1 || len(others) <= 1 {
		return candidates
	}
	var allMatching, allOthers int
	for _, pod := range pods {
		if pod == nil {
			continue
		}
		if pod.Labels[term.Key] == term.Value {
			allMatching++
		} else {
			allOthers++
		}
	}
	last := matching[len(matching)-1]
	matching = matching[:len(matching)-1]
	allMatching--

	g := scatterGroups(allMatching, allOthers, len(matching), len(others))
	ordered := make([]int, 0, len(candidates))
	if g.othersFirst > 0 {
		ordered = append(ordered, others[:g.othersFirst]...)
		others = others[g.othersFirst:]
	}
	for range g.count {
		matching, ordered = moveFirst(matching, ordered, g.matchingSize)
		others, ordered = moveFirst(others, ordered, g.othersSize)
	}
	ordered = append(ordered, matching...)
	ordered = append(ordered, others...)
	return append(ordered, last)
}

// moveFirst moves the first n of src (all of it when shorter) to the end of dst.
func moveFirst(src, dst []int, n int) ([]int, []int) {
	if len(src) <= n {
		return nil, append(dst, src...)
	}
	return src[n:], append(dst, src[:n]...)
}

// groups is how scatterTerm interleaves: count rounds of matchingSize matching and
// othersSize other candidates, after othersFirst other candidates.
type groups struct {
	count, matchingSize, othersSize, othersFirst int
}

// evenGroups splits matching and other pods into as many rounds as the smaller side has
// pods, each round taking a rounded share of either side.
func evenGroups(matching, others int) groups {
	g := groups{count: min(matching, others)}
	g.matchingSize = int(math.Round(float64(matching) / float64(g.count)))
	g.othersSize = int(math.Round(float64(others) / float64(g.count)))
	return g
}

// scatterGroups picks the rounds for the candidates (matching and others of them) given
// the mix among all pods (allMatching and allOthers): the candidates' own even split when
// they are no denser in matching pods than all pods are, else rounds sized after all pods,
// with the other candidates that do not fit them first.
func scatterGroups(allMatching, allOthers, matching, others int) groups {
	all := evenGroups(allMatching, allOthers)
	candidates := evenGroups(matching, others)
	if float32(allOthers)/float32(allMatching) >= float32(others)/float32(matching) {
		return candidates
	}
	g := groups{matchingSize: all.matchingSize, othersSize: all.othersSize}
	g.count = min(matching/g.matchingSize, others/g.othersSize)
	g.othersFirst = others - g.count*g.othersSize
	return g
}
