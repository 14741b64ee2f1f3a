// Package all registers every environment class: import it for its side
// effect to build any environment config.
//
//	import _ "github.com/benchtune/bench/environments/all"
package all

import (
	// CompositeEnv.
	_ "github.com/benchtune/bench/environments/composite"
	// LocalEnv, LocalFileShareEnv.
	_ "github.com/benchtune/bench/environments/local"
	// MockEnv.
	_ "github.com/benchtune/bench/environments/mock"
	// RemoteEnv, HostEnv, VMEnv, OSEnv, NetworkEnv, SaaSEnv.
	_ "github.com/benchtune/bench/environments/remote"
)
