// Package s3 is Steward's client of S3-compatible object stores: what the
// controllers of MatrixOne's object storage (BucketClaim, backups,
// restores; docs/design/matrixone-data.md) ask a store, on minio-go. It
// imports nothing of the framework or of any system.
//
// A [Location] is a bucket and a key prefix at an endpoint, with how to
// reach it: the region, path-style or virtual-hosted addressing,
// credentials (or none) and a CA bundle. [Overlaps] is the rule that keeps
// two claims apart: two locations overlap when they name the same bucket
// at the same endpoint and one's prefix equals or contains the other's on
// a "/" boundary (an empty prefix contains the whole bucket).
//
// A [Client] made by [New] is confined to its location: every key it
// lists, writes or deletes lies under the location's prefix, taken as a
// directory ("team/c1" holds "team/c1/data/x", never "team/c10/x"), and
// the prefixes its methods take are relative to it, directories too. It
// makes the bucket ([Client.EnsureBucket]), lists a prefix one page at a
// time from a key ([Client.ListPrefix]: the key to resume from fits in a
// status field), deletes everything under a prefix in batches of bulk
// deletes ([Client.DeletePrefix]: bounded per call, with counts, and
// resumable, since a later call lists what is left), and tells whether a
// prefix holds anything ([Client.IsEmpty]). The last two first check, once
// per client, that the bucket answers: a store addressed the wrong way
// (virtual-hosted requests to one that wants path-style ones, as
// versitygw does) answers a listing with its list of buckets, which would
// read as an empty prefix.
//
// Every call takes a context and ends when it does; callers give it a
// deadline. Errors say what was asked of which bucket at which endpoint,
// and wrap the store's answer: [Code] returns the S3 error code of one
// (AccessDenied, NoSuchBucket, SignatureDoesNotMatch, ...), for a
// condition's reason. Credentials never appear in an error.
//
// +steward:role=client
package s3
