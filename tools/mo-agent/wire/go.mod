module github.com/stewardhq/steward/tools/mo-agent/wire

go 1.26.0
