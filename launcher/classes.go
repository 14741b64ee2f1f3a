package launcher

// Every environment and service class, registered by its package.
import (
	_ "github.com/benchtune/bench/environments/all"
	_ "github.com/benchtune/bench/services/aws"
	_ "github.com/benchtune/bench/services/azure"
	_ "github.com/benchtune/bench/services/local"
	_ "github.com/benchtune/bench/services/mock"
	_ "github.com/benchtune/bench/services/ssh"
)
