// Package all is the explicit, ordered list of the bundles compiled into
// sipnab. The order here decides the order of tools/list, whatever the
// configuration's order. To add a bundle, import it and append it.
package all

import (
	"github.com/sipnab/sipnab/bundles/captures"
	"github.com/sipnab/sipnab/bundles/core"
	"github.com/sipnab/sipnab/bundles/media"
	"github.com/sipnab/sipnab/bundles/security"
	"github.com/sipnab/sipnab/bundles/server"
	"github.com/sipnab/sipnab/bundles/signaling"
	"github.com/sipnab/sipnab/bundles/tls"
	"github.com/sipnab/sipnab/bundles/vcon"
	"github.com/sipnab/sipnab/sdk"
)

// Bundles returns every compiled-in bundle, in order.
func Bundles() []sdk.Bundle {
	return []sdk.Bundle{
		core.Bundle{},
		signaling.Bundle{},
		media.Bundle{},
		captures.Bundle{},
		security.Bundle{},
		server.Bundle{},
		tls.Bundle{},
		vcon.Bundle{},
	}
}
