// Package all is the explicit, ordered list of the bundles compiled into
// sipnab. The order here decides the order of tools/list, whatever the
// configuration's order. To add a bundle, import it and append it.
package all

import (
	"github.com/sipnab/sipnab/bundles/core"
	"github.com/sipnab/sipnab/bundles/server"
	"github.com/sipnab/sipnab/bundles/signaling"
	"github.com/sipnab/sipnab/sdk"
)

// Bundles returns every compiled-in bundle, in order.
func Bundles() []sdk.Bundle {
	return []sdk.Bundle{
		core.Bundle{},
		signaling.Bundle{},
		server.Bundle{},
	}
}
