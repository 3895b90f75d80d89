package engine

import "github.com/sipnab/sipnab/core/ami"

// AMISightings returns the cleartext Asterisk Manager Interface sightings
// (banners and login actions seen on TCP payloads that were not SIP), never
// nil: the check runs on every capture, so an empty list means looked,
// found none. Sightings carry no username and no secret. Refused counts
// sightings of new keys dropped at the tracker's cap.
func (c *Capture) AMISightings() (sightings []ami.Sighting, refused uint64) {
	return c.ami.Sightings(), c.ami.Stats().Refused
}
