// Package budget serializes and retries the status writes of PodUnavailableBudgets. The
// controller (recomputing the budget) and the pod webhook (spending it) both write a
// budget's status, possibly for many requests at once; one Cache per process gives them:
//
//   - a mutex per budget UID, held across each read-modify-write attempt, so that writers
//     in this process never race each other into a conflict;
//   - a write-through copy of each budget as last written here, because the informer lags
//     behind the writes and starting from its copy would conflict on every busy budget;
//   - the conflict-retry loop (four attempts, 500 ms apart, re-reading the budget live
//     after a conflict), which is what keeps several processes (webhooks run on every
//     manager replica) correct: the API server's resourceVersion check is the real arbiter,
//     the lock and the cache only make conflicts rare.
package budget
