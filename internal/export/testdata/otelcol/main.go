// Command otelcol is the OpenTelemetry Collector the export tests send
// spans to: core's OTLP receiver and debug exporter, configured from a
// file. TestCollector builds it (see collector_test.go).
package main

import (
	"log"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/debugexporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

func main() {
	set := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "rpctap-otelcol", Description: "rpctap test collector", Version: "test"},
		Factories: func() (otelcol.Factories, error) {
			var f otelcol.Factories
			var err error
			if f.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory()); err != nil {
				return f, err
			}
			if f.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](debugexporter.NewFactory()); err != nil {
				return f, err
			}
			f.Telemetry = otelconftelemetry.NewFactory()
			return f, nil
		},
		ConfigProviderSettings: otelcol.ConfigProviderSettings{ResolverSettings: confmap.ResolverSettings{
			ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory()},
			DefaultScheme:     "file",
		}},
	}
	if err := otelcol.NewCommand(set).Execute(); err != nil {
		log.Fatal(err)
	}
}
