package sdk

import (
	"context"
	"fmt"
)

// Resource is a resource at one fixed URI (e.g. sipnab://live/dialogs).
type Resource struct {
	// URI names the resource.
	URI string
	// Name is a short human-readable name.
	Name string
	// Description says what reading it returns.
	Description string
	// MIMEType of the content, e.g. "application/json".
	MIMEType string
	// Read renders the resource now.
	Read func(ctx context.Context) (ResourceContent, error)
	// Revision, when set, makes the resource subscribable: the host reads it
	// (a cheap counter, e.g. the dialog store's revision) to decide whether
	// to render again, then compares a digest of the rendering, and sends
	// notifications/resources/updated only when the content changed, at most
	// once a second per subscriber. Nil: subscriptions are refused.
	Revision func() uint64
	// Instance, when set, names what the rendering comes from (the capture
	// instance). When it changes (a capture swap), subscribers are notified
	// even if the new rendering is byte-identical to the old one.
	Instance func() string
}

// ResourceTemplate serves every URI matching an RFC 6570 template
// (e.g. sipnab://live/dialogs/{call_id}). Advertise a template only when its
// URIs can resolve.
type ResourceTemplate struct {
	// URITemplate is the RFC 6570 template.
	URITemplate string
	// Name, Description and MIMEType as for Resource.
	Name, Description, MIMEType string
	// Read renders one URI; vars holds the template's variables.
	Read func(ctx context.Context, uri string, vars map[string]string) (ResourceContent, error)
	// Revision makes the template's URIs subscribable, as for Resource.
	Revision func() uint64
	// Instance, as for Resource: a swap always notifies.
	Instance func() string
	// Complete, when set, offers values for a template variable
	// (completion/complete): live values, never cached. The host caps the
	// answer at 100 values (lowered by --mcp-max-rows) and reports the total.
	// An unknown variable answers nothing.
	Complete func(ctx context.Context, variable, prefix string) []string
}

// ResourceContent is one rendering: Text (UTF-8) or Blob (sent base64).
type ResourceContent struct {
	// MIMEType overrides the resource's MIME type when set.
	MIMEType string
	// Text is the content as text.
	Text string
	// Blob is binary content; used when Text is empty.
	Blob []byte
}

// resources collects what a bundle registers through its Env.
type resources struct {
	fixed     []Resource
	templates []ResourceTemplate
}

// AddResource registers a resource the bundle serves. Call it from
// Provision; the resource is served when any of the bundle's tools is
// loaded.
func (e Env) AddResource(r Resource) {
	if e.res != nil {
		e.res.fixed = append(e.res.fixed, r)
	}
}

// AddResourceTemplate registers a resource template, as AddResource.
func (e Env) AddResourceTemplate(t ResourceTemplate) {
	if e.res != nil {
		e.res.templates = append(e.res.templates, t)
	}
}

func checkResources(prefix string, r *resources, seen map[string]string, id string) []error {
	var errs []error
	for _, x := range r.fixed {
		switch {
		case x.URI == "" || x.Name == "":
			errs = append(errs, fmt.Errorf("%sresource %q: URI and Name are required", prefix, x.URI))
		case x.Read == nil:
			errs = append(errs, fmt.Errorf("%sresource %q: no Read", prefix, x.URI))
		}
		if prev, dup := seen[x.URI]; dup {
			errs = append(errs, fmt.Errorf("%sresource %q: already served by bundle %q", prefix, x.URI, prev))
		}
		seen[x.URI] = id
	}
	for _, x := range r.templates {
		switch {
		case x.URITemplate == "" || x.Name == "":
			errs = append(errs, fmt.Errorf("%sresource template %q: URITemplate and Name are required", prefix, x.URITemplate))
		case x.Read == nil:
			errs = append(errs, fmt.Errorf("%sresource template %q: no Read", prefix, x.URITemplate))
		}
		if prev, dup := seen[x.URITemplate]; dup {
			errs = append(errs, fmt.Errorf("%sresource template %q: already served by bundle %q", prefix, x.URITemplate, prev))
		}
		seen[x.URITemplate] = id
	}
	return errs
}
