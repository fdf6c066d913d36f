// Package pod will hold the admission webhooks for pods, on behalf of
// PodUnavailableBudget: the related-budget annotation on CREATE, and the budget check on
// DELETE, eviction and (optionally) UPDATE. It registers them with package webhook's
// server and holds no serving code of its own.
package pod
