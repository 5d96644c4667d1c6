module github.com/kubecrew/kubecrew/services/agent

go 1.26.0
