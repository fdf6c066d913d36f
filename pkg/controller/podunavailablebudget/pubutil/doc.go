// Package pubutil holds the pure PodUnavailableBudget rules shared by the controller and the
// pod webhooks: which budget a pod names, whether a pod counts as available, which
// operations a budget protects, and how many pods it keeps available. It uses no client,
// no cache and no clock (callers pass the time), so both sides judge a pod the same way.
package pubutil
