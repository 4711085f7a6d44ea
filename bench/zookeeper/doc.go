// Package zookeeper holds the ZooKeeper system's benchmarks. They print
// figures and assert nothing about time:
//
//   - BenchmarkEnsembleStats (no build tag): observing (stat and voting_view)
//     of 7 real ZooKeeper servers (zktest, on loopback) with one of them
//     hung (SIGSTOP), against the same 7 all answering.
//   - BenchmarkCreate and BenchmarkIdle (build tag bench): against a local
//     cluster with Steward installed (make bench sets it up): apply to
//     Ready of a 3-server cluster split into operator time and pod/JVM
//     start, the API requests the operator made for it, writes per minute
//     while 20 clusters sit idle (target 0), and the operator's resident
//     memory.
//   - BenchmarkCreateVsStatefulSet and BenchmarkHealVsStatefulSet (build tag
//     bench): a 3-server cluster against the same servers as a plain
//     StatefulSet written by hand (same image and heap, static zoo.cfg,
//     Parallel pods, a headless Service publishing unready addresses, the
//     same probe commands every 5 s), each created, or healed after losing
//     2 of its 3 pods, nine times in alternation; they print both series,
//     each round's timeline (the StatefulSet, each pod's creation, start
//     and readiness, and from its log the JVM's start, the client port,
//     the AdminServer and the election), and the ratios of medians and
//     worsts. BENCH_CPU_BURNERS=N loads the machine with N busy goroutines
//     for the run; BENCH_ZK_LOGS=DIR keeps every server's log of every
//     round under DIR/<namespace>/.
//
// Run them with `make bench`.
package zookeeper
