package version

// Version is the version of this build, set at link time with -ldflags -X.
// A plain "go build" leaves it at "dev".
var Version = "dev"
