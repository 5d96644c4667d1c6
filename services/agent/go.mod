module github.com/kubecrew/kubecrew/services/agent

go 1.26.0

require (
	github.com/kubecrew/kubecrew/agents v0.0.0
	github.com/kubecrew/kubecrew/pkg v0.0.0
)

require github.com/a2aproject/a2a-go v0.3.3 // indirect

replace (
	github.com/kubecrew/kubecrew/agents => ../../agents
	github.com/kubecrew/kubecrew/pkg => ../../pkg
)
