// Package expectations remembers, per controller key, how many child creations and
// deletions a controller has issued but not yet seen through its informers.
//
// A controller works from an informer cache that lags behind its own writes. Without
// expectations it would, on the next sync, count the children it just created as missing
// and create them again. With expectations it skips create/delete work for an owner until
// the informer has reported every write (or ExpectationsTimeout has passed since the
// expectation was set), while still computing and writing status.
//
// # Caller contract
//
// Every controller that creates or deletes children through this package MUST:
//
//  1. Check Satisfied(key) before listing children from the cache. When it is false, skip
//     create/delete work for this sync but still compute and write status.
//  2. Call ExpectCreations / ExpectDeletions before issuing the writes, never after: an
//     informer event can arrive before the write call returns.
//  3. For every write that fails, and for every write skipped by slow-start batching, call
//     the matching CreationObserved / DeletionObserved exactly once, so that afterwards the
//     record only counts successful writes not yet seen by the informer.
//  4. From informer handlers call CreationObserved on the add of a child whose controller
//     reference resolves to the owner, and (with TrackedStore) DeletionObserved(key, podKey)
//     on delete or on an update that sets deletionTimestamp.
//  5. Call Delete(key) when the owner is deleted, or when its UID changes under the same
//     name.
//
// Expiry is evaluated lazily inside Satisfied; nothing runs in the background. A record is
// expired when now - timestamp > ExpectationsTimeout. Known weakness (kubernetes issue
// #129795): an informer lagging longer than the timeout lets a controller act on a stale
// cache; controllers add a read-your-writes guard on top of this package to mitigate it.
//
// Counters may go negative when an observation races ahead of the expectation being set;
// a negative counter counts as met.
//
// VersionStore is the same idea for updates: it remembers the resource version each child
// had after the controller wrote it, so that a sync does not act on the cached child the
// write replaced.
//
// NameStore keeps creations and deletions by child name instead of by count, for
// controllers that name their children themselves (the CloneSet's pods and claims); it leaves
// what a long wait means to the controller.
package expectations
