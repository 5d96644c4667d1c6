module github.com/kubecrew/kubecrew/agents

go 1.26.0
