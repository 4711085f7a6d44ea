// Command mo-agent runs beside mo-service in Steward's MatrixOne image. It is
// its own Go module because it imports MatrixOne (cgo, about 750 packages),
// which the operator's module must never do.
//
//	mo-agent run [--volume DIR --stores DIR --hakeeper ADDRS] TEMPLATE [-- MO-SERVICE-ARGS...]
//	    renders the pod's configuration from TEMPLATE (the operator's
//	    ConfigMap) and replaces itself with /mo-service -cfg <rendered>;
//	    with --volume (log stores), the store's UUID is the one recorded
//	    on its volume (package identity).
//	mo-agent probe --listen ADDR --hakeeper HOST:PORT[,HOST:PORT...]
//	    serves HAKeeper's view of the cluster as JSON on GET /v1/cluster,
//	    and a CN's lock service restart handshake with the TN's lock table
//	    allocator on POST and GET /v1/cn/{uuid}/restart.
//	mo-agent backup --addr HOST:PORT --endpoint URL --region R --bucket B --path P [--path-style]
//	    runs one full physical backup (BACKUP '' S3OPTION, package backup)
//	    through the CN or proxy at --addr, as root (password in
//	    MO_PASSWORD, the store's keys in AWS_ACCESS_KEY_ID and
//	    AWS_SECRET_ACCESS_KEY): the pod of a BackupJob.
//	mo-agent store-id NAMESPACE POD
//	    prints the store UUID the pod runs as (wire.StoreID).
//
// The module's second command, cmd/sql-ready, is the CN and proxy pods'
// readiness probe (/sql-ready in the image): a MySQL handshake and select
// 1 on the pod's SQL port (package sqlready). It is a binary of its own
// because every start of mo-agent initialises MatrixOne's packages (about
// 50 MiB), and the kubelet runs the probe every few seconds in the
// container's memory limit.
//
// The JSON the probe serves, and the store UUID, are a contract with the
// operator: both import package wire (its own module, standard library
// only), which documents the JSON field by field.
package main
