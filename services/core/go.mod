module github.com/kubecrew/kubecrew/services/core

go 1.26.0
