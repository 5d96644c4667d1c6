package app

import "context"

// setupPulse mounts GET/POST /pulse and starts the pulse timer when
// PULSE_ENABLED. (The pulse issue fills this in.)
func (a *App) setupPulse(ctx context.Context) error { return nil }
