module github.com/kubecrew/kubecrew/services/agent

go 1.26.0

require (
	github.com/kubecrew/kubecrew/agents v0.0.0
	github.com/kubecrew/kubecrew/pkg v0.0.0
)

replace (
	github.com/kubecrew/kubecrew/agents => ../../agents
	github.com/kubecrew/kubecrew/pkg => ../../pkg
)
