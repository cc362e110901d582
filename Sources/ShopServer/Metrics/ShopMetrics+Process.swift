import Prometheus
import Synchronization

/// The build and the process on `/metrics`, so an operator sees which code runs (`shopledger_build_info`,
/// a constant 1 whose labels carry the release and commit, the usual Prometheus idiom) and how the
/// process fares (CPU, memory, descriptors against their limit, its start time for restarts).
extension ShopMetrics {
    /// Reads `/proc/self` now and sets the `process_*` metrics; off Linux, sets none.
    func recordProcessMetrics() {
        guard let process = ProcessMetrics.read() else { return }
        let counter = registry.makeCounter(descriptor: Self.processCPU)
        cpuSecondsCounted.withLock { counted in
            if process.cpuSeconds > counted {
                counter.increment(by: process.cpuSeconds - counted)
                counted = process.cpuSeconds
            }
        }
        registry.makeGauge(descriptor: Self.processResident).set(to: process.residentBytes)
        registry.makeGauge(descriptor: Self.processOpenFDs).set(to: process.openFileDescriptors)
        if let max = process.maxFileDescriptors {
            registry.makeGauge(descriptor: Self.processMaxFDs).set(to: max)
        }
        registry.makeGauge(descriptor: Self.processStart).set(to: process.startTimeSeconds)
    }

    static var buildInfo: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "shopledger", metricName: "build_info", unitName: "",
            helpText: "Always 1; the labels name the release and the commit this binary was built from.")
    }
    static var processCPU: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "process", metricName: "cpu_seconds", unitName: "total",
            helpText: "Total user and system CPU time spent in seconds.")
    }
    static var processResident: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "process", metricName: "resident_memory", unitName: "bytes",
            helpText: "Resident memory size in bytes.")
    }
    static var processOpenFDs: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "process", metricName: "open_fds", unitName: "", helpText: "Number of open file descriptors.")
    }
    static var processMaxFDs: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "process", metricName: "max_fds", unitName: "",
            helpText: "Maximum number of open file descriptors.")
    }
    static var processStart: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "process", metricName: "start_time", unitName: "seconds",
            helpText: "Start time of the process since unix epoch in seconds.")
    }
}
