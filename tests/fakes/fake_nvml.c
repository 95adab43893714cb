/* A scripted stand-in for libnvidia-ml.so.1, for the NVML loader and telemetry tests on machines without
 * a driver. It exports the entry points core/nvml_loader.cpp resolves, with the same C signatures, and
 * answers from values the test sets through fake_nvml_set(key, value) (looked up with dlsym on the same
 * library). Two devices, PCI bus ids 0000:01:00.0 and 0000:02:00.0, report the same values. */
#include <stdatomic.h>
#include <string.h>
#include <strings.h>

typedef int nvmlReturn_t;
typedef struct fake_device* nvmlDevice_t;
struct fake_device {
  int index;
};
typedef struct {
  unsigned int gpu, memory;
} nvmlUtilization_t;
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;

enum { OK = 0, ERR_UNINITIALIZED = 1, ERR_INVALID_ARGUMENT = 2, ERR_NOT_SUPPORTED = 3, ERR_NOT_FOUND = 6,
       ERR_UNKNOWN = 999 };

/* The script: one value per key (defaults in fake_nvml_set("reset", 0)). */
enum key {
  K_INIT_FAILS, K_INITIALIZED, K_SM_CLOCK, K_MEM_CLOCK, K_MAX_SM_CLOCK, K_MAX_MEM_CLOCK, K_POWER_MW, K_POWER_LIMIT_MW,
  K_DEFAULT_POWER_LIMIT_MW, K_TEMP, K_UTIL_GPU, K_UTIL_MEM, K_REASONS, K_ECC_CORRECTED, K_ECC_UNCORRECTED,
  K_ECC_SUPPORTED, K_REMAP_CORRECTED, K_REMAP_UNCORRECTED, K_REMAP_PENDING, K_REMAP_FAILURE, K_REMAP_SUPPORTED,
  K_PCIE_REPLAYS, K_NVLINK_LINKS, K_NVLINK_ERRORS_PER_COUNTER, K_MEM_TOTAL, K_MEM_FREE, K_POWER_SUPPORTED,
  K_CLOCK_CALLS, K_COUNT
};
static const char* const key_names[K_COUNT] = {
    "init_fails", "initialized", "sm_clock", "mem_clock", "max_sm_clock", "max_mem_clock", "power_mw",
    "power_limit_mw", "default_power_limit_mw", "temp", "util_gpu", "util_mem", "reasons", "ecc_corrected",
    "ecc_uncorrected", "ecc_supported", "remap_corrected", "remap_uncorrected", "remap_pending", "remap_failure",
    "remap_supported", "pcie_replays", "nvlink_links", "nvlink_errors_per_counter", "mem_total", "mem_free",
    "power_supported", "clock_calls"};
static _Atomic unsigned long long values[K_COUNT];
static struct fake_device devices[2] = {{0}, {1}};
static const char* const bus_ids[2] = {"0000:01:00.0", "0000:02:00.0"};

static void reset(void) {
  for (int i = 0; i < K_COUNT; ++i) atomic_store(&values[i], 0);
  atomic_store(&values[K_SM_CLOCK], 1980);
  atomic_store(&values[K_MEM_CLOCK], 3201);
  atomic_store(&values[K_MAX_SM_CLOCK], 1980);
  atomic_store(&values[K_MAX_MEM_CLOCK], 3201);
  atomic_store(&values[K_POWER_MW], 350000);
  atomic_store(&values[K_POWER_LIMIT_MW], 700000);
  atomic_store(&values[K_DEFAULT_POWER_LIMIT_MW], 700000);
  atomic_store(&values[K_TEMP], 45);
  atomic_store(&values[K_UTIL_GPU], 100);
  atomic_store(&values[K_UTIL_MEM], 60);
  atomic_store(&values[K_ECC_SUPPORTED], 1);
  atomic_store(&values[K_REMAP_SUPPORTED], 1);
  atomic_store(&values[K_POWER_SUPPORTED], 1);
  atomic_store(&values[K_NVLINK_LINKS], 18);
  atomic_store(&values[K_MEM_TOTAL], 150ull << 30);
  atomic_store(&values[K_MEM_FREE], 149ull << 30);
}

static unsigned long long get(enum key k) { return atomic_load(&values[k]); }

/* Test control: "reset" restores the defaults; any other key sets its value. Returns 0, or -1 for an
 * unknown key. */
int fake_nvml_set(const char* key, unsigned long long value) {
  if (strcmp(key, "reset") == 0) {
    reset();
    return 0;
  }
  for (int i = 0; i < K_COUNT; ++i)
    if (strcmp(key, key_names[i]) == 0) {
      atomic_store(&values[i], value);
      return 0;
    }
  return -1;
}
unsigned long long fake_nvml_get(const char* key) {
  for (int i = 0; i < K_COUNT; ++i)
    if (strcmp(key, key_names[i]) == 0) return get((enum key)i);
  return ~0ull;
}

__attribute__((constructor)) static void fake_nvml_load(void) { reset(); }

static int ready(nvmlDevice_t d) { return get(K_INITIALIZED) && (d == &devices[0] || d == &devices[1]); }
#define CHECK(d, out)                                      \
  do {                                                     \
    if (!get(K_INITIALIZED)) return ERR_UNINITIALIZED;     \
    if (!ready(d) || !(out)) return ERR_INVALID_ARGUMENT;  \
  } while (0)

nvmlReturn_t nvmlInit_v2(void) {
  if (get(K_INIT_FAILS)) return ERR_UNKNOWN;
  atomic_store(&values[K_INITIALIZED], 1);
  return OK;
}
nvmlReturn_t nvmlShutdown(void) {
  atomic_store(&values[K_INITIALIZED], 0);
  return OK;
}
const char* nvmlErrorString(nvmlReturn_t rc) {
  switch (rc) {
    case OK: return "Success";
    case ERR_UNINITIALIZED: return "Uninitialized";
    case ERR_INVALID_ARGUMENT: return "Invalid Argument";
    case ERR_NOT_SUPPORTED: return "Not Supported";
    case ERR_NOT_FOUND: return "Not Found";
    default: return "Unknown Error";
  }
}
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (!get(K_INITIALIZED)) return ERR_UNINITIALIZED;
  *count = 2;
  return OK;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  if (!get(K_INITIALIZED)) return ERR_UNINITIALIZED;
  if (index >= 2 || !device) return ERR_INVALID_ARGUMENT;
  *device = &devices[index];
  return OK;
}
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, nvmlDevice_t* device) {
  if (!get(K_INITIALIZED)) return ERR_UNINITIALIZED;
  for (int i = 0; i < 2; ++i)
    if (bus_id && strcasecmp(bus_id, bus_ids[i]) == 0) {
      *device = &devices[i];
      return OK;
    }
  return ERR_NOT_FOUND;
}
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char* name, unsigned int length) {
  CHECK(d, name);
  const char* text = "NVIDIA H200 (fake)";
  if (length < strlen(text) + 1) return ERR_INVALID_ARGUMENT;
  strcpy(name, text);
  return OK;
}
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int* clock) {
  CHECK(d, clock);
  if (type == 1) {
    atomic_fetch_add(&values[K_CLOCK_CALLS], 1);
    *clock = (unsigned)get(K_SM_CLOCK);
  } else if (type == 2) {
    *clock = (unsigned)get(K_MEM_CLOCK);
  } else {
    return ERR_NOT_SUPPORTED;
  }
  return OK;
}
nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned int* clock) {
  CHECK(d, clock);
  if (type == 1) *clock = (unsigned)get(K_MAX_SM_CLOCK);
  else if (type == 2) *clock = (unsigned)get(K_MAX_MEM_CLOCK);
  else return ERR_NOT_SUPPORTED;
  return OK;
}
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int* mw) {
  CHECK(d, mw);
  if (!get(K_POWER_SUPPORTED)) return ERR_NOT_SUPPORTED;
  *mw = (unsigned)get(K_POWER_MW);
  return OK;
}
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int* mw) {
  CHECK(d, mw);
  if (!get(K_POWER_SUPPORTED)) return ERR_NOT_SUPPORTED;
  *mw = (unsigned)get(K_POWER_LIMIT_MW);
  return OK;
}
nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t d, unsigned int* mw) {
  CHECK(d, mw);
  if (!get(K_POWER_SUPPORTED)) return ERR_NOT_SUPPORTED;
  *mw = (unsigned)get(K_DEFAULT_POWER_LIMIT_MW);
  return OK;
}
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int* temp) {
  CHECK(d, temp);
  if (sensor != 0) return ERR_INVALID_ARGUMENT;
  *temp = (unsigned)get(K_TEMP);
  return OK;
}
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t* u) {
  CHECK(d, u);
  u->gpu = (unsigned)get(K_UTIL_GPU);
  u->memory = (unsigned)get(K_UTIL_MEM);
  return OK;
}
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long* reasons) {
  CHECK(d, reasons);
  *reasons = get(K_REASONS);
  return OK;
}
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int error_type, int counter_type, unsigned long long* n) {
  CHECK(d, n);
  if (!get(K_ECC_SUPPORTED)) return ERR_NOT_SUPPORTED;
  if (counter_type != 0 && counter_type != 1) return ERR_INVALID_ARGUMENT;
  if (error_type == 0) *n = get(K_ECC_CORRECTED);
  else if (error_type == 1) *n = get(K_ECC_UNCORRECTED);
  else return ERR_INVALID_ARGUMENT;
  return OK;
}
nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned int* corr, unsigned int* unc, unsigned int* pending,
                                       unsigned int* failure) {
  CHECK(d, corr && unc && pending && failure);
  if (!get(K_REMAP_SUPPORTED)) return ERR_NOT_SUPPORTED;
  *corr = (unsigned)get(K_REMAP_CORRECTED);
  *unc = (unsigned)get(K_REMAP_UNCORRECTED);
  *pending = (unsigned)get(K_REMAP_PENDING);
  *failure = (unsigned)get(K_REMAP_FAILURE);
  return OK;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* m) {
  CHECK(d, m);
  m->total = get(K_MEM_TOTAL);
  m->free = get(K_MEM_FREE);
  m->used = m->total - m->free;
  return OK;
}
nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t d, unsigned int* n) {
  CHECK(d, n);
  *n = (unsigned)get(K_PCIE_REPLAYS);
  return OK;
}
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned int link, int* active) {
  CHECK(d, active);
  if (link >= 18) return ERR_INVALID_ARGUMENT;
  *active = link < get(K_NVLINK_LINKS) ? 1 : 0;
  return OK;
}
nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t d, unsigned int link, int counter, unsigned long long* n) {
  CHECK(d, n);
  if (link >= 18 || counter < 0 || counter > 4) return ERR_INVALID_ARGUMENT;
  *n = get(K_NVLINK_ERRORS_PER_COUNTER);
  return OK;
}
