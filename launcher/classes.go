package launcher

// Every environment, service and engine class, registered by its package.
import (
	_ "github.com/benchtune/bench/engines/sshpool"
	_ "github.com/benchtune/bench/environments/all"
	_ "github.com/benchtune/bench/services/aws"
	_ "github.com/benchtune/bench/services/azure"
	_ "github.com/benchtune/bench/services/local"
	_ "github.com/benchtune/bench/services/ssh"
)
