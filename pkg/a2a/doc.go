// Package a2a is kubecrew's side of the A2A protocol (spec 0.3, JSON-RPC)
// that both binaries may use: the metadata every message carries, the
// social-depth and cycle rules, peer resolution (AGENT_PEERS, then
// PEER_URL_TEMPLATE, nothing else), the conversions between runs and A2A
// tasks, the agent card, the audit log's wire form, and a client that sends
// ask / notify / delegate messages through the official SDK
// (github.com/a2aproject/a2a-go) and records every one of them.
//
// The SDK's own package is also named a2a; files here import it as sdk.
package a2a
