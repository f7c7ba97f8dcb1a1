/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Short names for the protoc-c types generated from otlp_metrics.proto: the
 * generated ones carry the whole package path
 * (Opentelemetry__Proto__Collector__Metrics__V1__...) and make the encoder
 * unreadable.
 */
#ifndef MM_EXPORTER_OTLP_PB_H
#define MM_EXPORTER_OTLP_PB_H

#include "otlp_metrics.pb-c.h"

#define OTLP_PB(x)  Opentelemetry__Proto__Collector__Metrics__V1__##x
#define OTLP_PBC(x) OPENTELEMETRY__PROTO__COLLECTOR__METRICS__V1__##x
#define OTLP_PBD(x) opentelemetry__proto__collector__metrics__v1__##x

typedef OTLP_PB(ExportMetricsServiceRequest) otlp_pb_request;
typedef OTLP_PB(ExportMetricsServiceResponse) otlp_pb_response;
typedef OTLP_PB(ExportMetricsPartialSuccess) otlp_pb_partial;
typedef OTLP_PB(ResourceMetrics) otlp_pb_resource_metrics;
typedef OTLP_PB(Resource) otlp_pb_resource;
typedef OTLP_PB(ScopeMetrics) otlp_pb_scope_metrics;
typedef OTLP_PB(InstrumentationScope) otlp_pb_scope;
typedef OTLP_PB(KeyValue) otlp_pb_kv;
typedef OTLP_PB(AnyValue) otlp_pb_any;
typedef OTLP_PB(Metric) otlp_pb_metric;
typedef OTLP_PB(Gauge) otlp_pb_gauge;
typedef OTLP_PB(Sum) otlp_pb_sum;
typedef OTLP_PB(Histogram) otlp_pb_histogram;
typedef OTLP_PB(ExponentialHistogram) otlp_pb_exp_histogram;
typedef OTLP_PB(NumberDataPoint) otlp_pb_number_dp;
typedef OTLP_PB(HistogramDataPoint) otlp_pb_histogram_dp;
typedef OTLP_PB(ExponentialHistogramDataPoint) otlp_pb_exp_histogram_dp;
typedef OTLP_PB(ExponentialHistogramDataPoint__Buckets) otlp_pb_exp_buckets;

#define otlp_pb_request__unpack(buf, len)                                      \
	OTLP_PBD(export_metrics_service_request__unpack)(NULL, len, buf)
#define otlp_pb_request__free(m)                                               \
	OTLP_PBD(export_metrics_service_request__free_unpacked)(m, NULL)
#define otlp_pb_response__unpack(buf, len)                                     \
	OTLP_PBD(export_metrics_service_response__unpack)(NULL, len, buf)
#define otlp_pb_response__free(m)                                              \
	OTLP_PBD(export_metrics_service_response__free_unpacked)(m, NULL)

#endif /* MM_EXPORTER_OTLP_PB_H */
