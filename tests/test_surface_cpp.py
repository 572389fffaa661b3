"""The release surface of llama.cpp's server, read from C++ (verifier/surface/extract_cpp.py): small sources in the
shapes of 0.3.0 (`llama_arg`, `gpt_params`, examples/server/) and 0.3.36 (`common_arg`, `common_params`,
tools/server/ split in files), then `gotchas surface` end to end against a package index on 127.0.0.1, and (marked
`network`) the real 0.3.0, 0.3.9 and 0.3.36 sdists."""

from __future__ import annotations

import json

import pytest

from verifier.surface import extract_cpp
from verifier.surface.model import ENV, FLAG, METRIC, NO_VALUE, REQUEST, Item
from verifier.surface.read import SurfaceSpec, extract

from .conftest import REPO, run_cli
from .index_server import IndexServer, make_sdist

# --- 0.3.0: llama_arg, gpt_params ---------------------------------------------------------------------------------

V030_ARG = '''#include "arg.h"

gpt_params_context gpt_params_parser_init(gpt_params & params, llama_example ex, void(*print_usage)(int, char **)) {
    gpt_params_context ctx_arg(params);
    auto add_opt = [&](llama_arg arg) {
        if (arg.in_example(ex) || arg.in_example(LLAMA_EXAMPLE_COMMON)) {
            ctx_arg.options.push_back(std::move(arg));
        }
    };

    add_opt(llama_arg(
        {"-h", "--help", "--usage"},
        "print usage and exit",
        [](gpt_params & params) {
            params.usage = true;
        }
    ));
    add_opt(llama_arg(
        {"-c", "--ctx-size"}, "N",
        format("size of the prompt context (default: %d, 0 = loaded from model)", params.n_ctx),
        [](gpt_params & params, int value) {
            params.n_ctx = value;
        }
    ).set_env("LLAMA_ARG_CTX_SIZE"));
    add_opt(llama_arg(
        {"--no-context-shift"},
        format("disables context shift on inifinite text generation (default: %s)", params.ctx_shift ? "disabled" : "enabled"),
        [](gpt_params & params) {
            params.ctx_shift = false;
        }
    ).set_examples({LLAMA_EXAMPLE_MAIN, LLAMA_EXAMPLE_SERVER}).set_env("LLAMA_ARG_NO_CONTEXT_SHIFT"));
    add_opt(llama_arg(
        {"-co", "--color"},
        format("colorise output (default: %s)", params.use_color ? "true" : "false"),
        [](gpt_params & params) {
            params.use_color = true;
        }
    ).set_examples({LLAMA_EXAMPLE_MAIN, LLAMA_EXAMPLE_INFILL}));
    add_opt(llama_arg(
        {"--temp"}, "N",
        format("temperature (default: %.1f)", (double)params.sparams.temp),
        [](gpt_params & params, const std::string & value) {
            params.sparams.temp = std::stof(value);
            params.sparams.temp = std::max(params.sparams.temp, 0.0f);
        }
    ).set_sparam());
    add_opt(llama_arg(
        {"-np", "--parallel"}, "N",
        format("number of parallel sequences to decode (default: %d)", params.n_parallel),
        [](gpt_params & params, int value) {
            params.n_parallel = value;
        }
    ).set_env("LLAMA_ARG_N_PARALLEL"));
    add_opt(llama_arg(
        {"--lora-scaled"}, "FNAME", "SCALE",
        "path to LoRA adapter with user defined scaling (can be repeated to use multiple adapters)",
        [](gpt_params & params, const std::string & fname, const std::string & scale) {
            params.lora_adapters.push_back({ fname, std::stof(scale) });
        }
    ).set_examples({LLAMA_EXAMPLE_COMMON, LLAMA_EXAMPLE_EXPORT_LORA}));
    add_opt(llama_arg(
        {"--host"}, "HOST",
        format("ip address to listen (default: %s)", params.hostname.c_str()),
        [](gpt_params & params, const std::string & value) {
            params.hostname = value;
        }
    ).set_examples({LLAMA_EXAMPLE_SERVER}).set_env("LLAMA_ARG_HOST"));
    add_opt(llama_arg(
        {"--metrics"},
        format("enable prometheus compatible metrics endpoint (default: %s)", params.endpoint_metrics ? "enabled" : "disabled"),
        [](gpt_params & params) {
            params.endpoint_metrics = true;
        }
    ).set_examples({LLAMA_EXAMPLE_SERVER}).set_env("LLAMA_ARG_ENDPOINT_METRICS"));
    add_opt(llama_arg(
        {"--threads-http"}, "N",
        format("number of threads used to process HTTP requests (default: %d)", params.n_threads_http),
        [](gpt_params & params, int value) {
            params.n_threads_http = value;
        }
    ).set_examples({LLAMA_EXAMPLE_SERVER}).set_env("LLAMA_ARG_THREADS_HTTP"));
#ifdef GGML_USE_RPC
    add_opt(llama_arg(
        {"--rpc"}, "SERVERS",
        "comma separated list of RPC servers",
        [](gpt_params & params, const std::string & value) {
            params.rpc_servers = value;
        }
    ));
#endif
    return ctx_arg;
}
'''

V030_COMMON_H = '''#pragma once

#include "llama.h"

struct gpt_sampler_params {
    uint32_t seed = LLAMA_DEFAULT_SEED; // the seed used to initialize llama_sampler
    float   temp  = 0.80f; // <= 0.0 to sample greedily
};

struct gpt_params {
    int32_t n_ctx                 =     %(n_ctx)s; // context size
    int32_t n_parallel            =     1; // number of parallel sequences to decode
    int32_t n_threads_http        =    -1; // number of threads to process HTTP requests (TODO: support threadpool)
    bool usage                    = false; // print usage
    bool use_color                = false; // use color to distinguish generations and inputs
    bool ctx_shift                = true;  // context shift on inifinite text generation
    bool endpoint_metrics         = false;

    struct gpt_sampler_params sparams;

    std::string hostname          = "127.0.0.1";
    std::string rpc_servers       = ""; // comma separated list of RPC servers
    std::vector<llama_lora_adapter_info> lora_adapters; // lora adapter path with user defined scale
};
'''

V030_COMMON_CPP = '''std::string fs_get_cache_directory() {
    std::string cache_directory = "";
    if (getenv("LLAMA_CACHE")) {
        cache_directory = std::getenv("LLAMA_CACHE");
    }
    return cache_directory;
}
'''

V030_SERVER = '''struct server_context {
    bool launch_slot_with_task(server_slot & slot, const server_task & task) {
        slot_params default_params;
        auto default_sparams = params.sparams;
        const auto & data = task.data;
        slot.params.stream             = json_value(data, "stream",            false);
        slot.params.cache_prompt       = json_value(data, "cache_prompt",      false);
        slot.params.n_predict          = json_value(data, "n_predict",         json_value(data, "max_tokens", default_params.n_predict));
        slot.sparams.temp              = json_value(data, "temperature",       default_sparams.temp);
        return true;
    }
};

int main(int argc, char ** argv) {
    gpt_params params;

    if (!gpt_params_parse(argc, argv, params, LLAMA_EXAMPLE_SERVER)) {
        return 1;
    }

    if (params.n_threads_http < 1) {
        // +2 threads for monitoring endpoints
        params.n_threads_http = std::max(params.n_parallel + 2, (int32_t) std::thread::hardware_concurrency() - 1);
    }

    const auto handle_metrics = [&](const httplib::Request &, httplib::Response & res) {
        json data = result.data;
        json all_metrics_def = json {
            {"counter", {{
                    {"name",  "prompt_tokens_total"},
                    {"help",  "Number of prompt tokens processed."},
                    {"value",  (uint64_t) data.at("n_prompt_tokens_processed_total")}
            }, {
                    {"name",  "n_decode_total"},
                    {"help",  "Total number of llama_decode() calls"},
                    {"value",  n_decode_total}
            }}},
            {"gauge", {{
                    {"name",  "kv_cache_usage_ratio"},
                    {"help",  "KV-cache usage. 1 means 100 percent usage."},
                    {"value",  1. * kv_cache_used_cells / params.n_ctx}
            }}}
        };
        std::stringstream prometheus;
        for (const auto & el : all_metrics_def.items()) {
            const auto & type        = el.key();
            const auto & metrics_def = el.value();
            for (const auto & metric_def : metrics_def) {
                const std::string name = metric_def.at("name");
                const std::string help = metric_def.at("help");
                auto value = json_value(metric_def, "value", 0.);
                prometheus << "# HELP llamacpp:" << name << " " << help  << "\\n"
                            << "# TYPE llamacpp:" << name << " " << type  << "\\n"
                            << "llamacpp:"        << name << " " << value << "\\n";
            }
        }
    };
    return 0;
}
'''

# --- 0.3.36: common_arg, common_params, the server split in files -------------------------------------------------

V036_ARG = '''#include "arg.h"

static std::initializer_list<enum llama_example> mmproj_examples = {
    LLAMA_EXAMPLE_MTMD,
    LLAMA_EXAMPLE_SERVER,
};

bool common_arg::get_value_from_env(std::string & output) const {
    if (env == nullptr) return false;
    if (!args_neg.empty()) {
        // for compatibility, we need to check LLAMA_ARG_NO_ env as well
        std::string neg_env = env;
        string_replace_all(neg_env, "LLAMA_ARG_", "LLAMA_ARG_NO_");
        char * neg_value = std::getenv(neg_env.c_str());
        if (neg_value) {
            output = "0"; // falsey
            return true;
        }
    }
    char * value = std::getenv(env);
    if (value) {
        output = value;
        return true;
    }
    return false;
}

common_params_context common_params_parser_init(common_params & params, llama_example ex, void(*print_usage)(int, char **)) {
    // per-example default params
    if (ex == LLAMA_EXAMPLE_COMPLETION) {
        params.use_jinja = false;   // disable jinja by default
    } else if (ex == LLAMA_EXAMPLE_MTMD) {
        params.sampling.temp = 0.2; // lower temp by default for better quality
    } else if (ex == LLAMA_EXAMPLE_SERVER) {
        params.n_parallel = -1;     // auto by default
    }

    params.use_color = tty_can_use_colors();

    common_params_context ctx_arg(params);
    auto add_opt = [&](common_arg arg) {
        if ((arg.in_example(ex) || arg.in_example(LLAMA_EXAMPLE_COMMON)) && !arg.is_exclude(ex)) {
            ctx_arg.options.push_back(std::move(arg));
        }
    };

    add_opt(common_arg(
        {"--version"},
        "show version and build info",
        [](common_params &) {
            llama_print_build_info(llama_version());
            exit(0);
        }
    ));
    add_opt(common_arg(
        {"-co", "--color"}, "[on|off|auto]",
        "Colorize output to distinguish prompt and user input from generations",
        [](common_params & params, const std::string & value) {
            params.use_color = is_truthy(value);
        }
    ).set_examples({LLAMA_EXAMPLE_COMPLETION, LLAMA_EXAMPLE_CLI}));
    add_opt(common_arg(
        {"-C", "--cpu-mask"}, "M",
        "CPU affinity mask: arbitrarily long hex. Complements cpu-range (default: \\"\\")",
        [](common_params & params, const std::string & mask) {
            params.cpuparams.mask_valid = true;
            if (!parse_cpu_mask(mask, params.cpuparams.cpumask)) {
                throw std::invalid_argument("invalid cpumask");
            }
        }
    ));
    add_opt(common_arg(
        {"-c", "--ctx-size"}, "N",
        string_format("size of the prompt context (default: %d, 0 = loaded from model)", params.n_ctx),
        [](common_params & params, int value) {
            params.n_ctx = value;
            if (value == 0) {
                params.fit_params_min_ctx = UINT32_MAX;
            }
        }
    ).set_env("LLAMA_ARG_CTX_SIZE"));
    add_opt(common_arg(
        {"-n", "--predict", "--n-predict"}, "N",
        string_format(
            ex == LLAMA_EXAMPLE_COMPLETION
                ? "number of tokens to predict (default: %d, -1 = infinity, -2 = until context filled)"
                : "number of tokens to predict (default: %d, -1 = infinity)",
            params.n_predict),
        [](common_params & params, int value) {
            params.n_predict = value;
        }
    ).set_env("LLAMA_ARG_N_PREDICT"));
    add_opt(common_arg(
        {"-p", "--prompt"}, "PROMPT",
        "prompt to start generation with; for system message, use -sys",
        [](common_params & params, const std::string & value) {
            params.prompt = value;
        }
    ).set_excludes({LLAMA_EXAMPLE_SERVER}));
    add_opt(common_arg(
        {"--perf"},
        {"--no-perf"},
        string_format("whether to enable internal libllama performance timings (default: %s)", params.no_perf ? "true" : "false"),
        [](common_params & params, bool value) {
            params.no_perf = !value;
            params.sampling.no_perf = !value;
        }
    ).set_env("LLAMA_ARG_PERF"));
    add_opt(common_arg(
        {"--context-shift"},
        {"--no-context-shift"},
        string_format("whether to use context shift on infinite text generation (default: %s)", params.ctx_shift ? "enabled" : "disabled"),
        [](common_params & params, bool value) {
            params.ctx_shift = value;
        }
    ).set_examples({LLAMA_EXAMPLE_COMPLETION, LLAMA_EXAMPLE_CLI, LLAMA_EXAMPLE_SERVER}).set_env("LLAMA_ARG_CONTEXT_SHIFT"));
    add_opt(common_arg(
        {"-kvu", "--kv-unified"},
        {"-no-kvu", "--no-kv-unified"},
        "use single unified KV buffer shared across all sequences (default: enabled if number of slots is auto)",
        [](common_params & params, bool value) {
            params.kv_unified = value;
        }
    ).set_env("LLAMA_ARG_KV_UNIFIED"));
    add_opt(common_arg(
        {"-kvo", "--kv-offload"},
        {"-nkvo", "--no-kv-offload"},
        string_format("whether to enable KV cache offloading (default: %s)", params.no_kv_offload ? "disabled" : "enabled"),
        [](common_params & params, bool value) {
            params.no_kv_offload = !value;
        }
    ).set_env("LLAMA_ARG_KV_OFFLOAD"));
    add_opt(common_arg(
        {"-fa", "--flash-attn"}, "[on|off|auto]",
        string_format("set Flash Attention use ('on', 'off', or 'auto', default: '%s')", llama_flash_attn_type_name(params.flash_attn_type)),
        [](common_params & params, const std::string & value) {
            if (is_truthy(value)) {
                params.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_ENABLED;
            } else if (is_falsey(value)) {
                params.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
            } else {
                params.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_AUTO;
            }
        }).set_env("LLAMA_ARG_FLASH_ATTN"));
    add_opt(common_arg(
        {"-mm", "--mmproj"}, "FILE",
        "path to a multimodal projector file. see tools/mtmd/README.md\\n"
        "note: if -hf is used, this argument can be omitted",
        [](common_params & params, const std::string & value) {
            params.mmproj.path = value;
        }
    ).set_examples(mmproj_examples).set_env("LLAMA_ARG_MMPROJ"));
    if (ex == LLAMA_EXAMPLE_SERVER) {
        // this is to make sure this option appears in the server-specific section of the help message
        add_opt(common_arg(
            {"-np", "--parallel"}, "N",
            string_format("number of server slots (default: %d, -1 = auto)", params.n_parallel),
            [](common_params & params, int value) {
                if (value == 0) {
                    throw std::invalid_argument("error: invalid value for n_parallel\\n");
                }
                params.n_parallel = value;
            }
        ).set_env("LLAMA_ARG_N_PARALLEL").set_examples({LLAMA_EXAMPLE_SERVER}));
    } else {
        add_opt(common_arg(
            {"-np", "--parallel"}, "N",
            string_format("number of parallel sequences to decode (default: %d)", params.n_parallel),
            [](common_params & params, int value) {
                params.n_parallel = value;
            }
        ).set_env("LLAMA_ARG_N_PARALLEL"));
    }
    add_opt(common_arg(
        {"--temp", "--temperature"}, "N",
        string_format("temperature (default: %.2f)", (double)params.sampling.temp),
        [](common_params & params, const std::string & value) {
            params.sampling.temp = std::stof(value);
            params.sampling.temp = std::max(params.sampling.temp, 0.0f);
        }
    ).set_sampling());
    add_opt(common_arg(
        {"--host"}, "HOST",
        string_format("IP addresses to listen on, comma-separated (default: %s)", params.hostnames[0].c_str()),
        [](common_params & params, const std::string & value) {
            params.hostnames.clear();
            for (auto & host : parse_csv_row(value)) {
                params.hostnames.push_back(host);
            }
        }
    ).set_examples({LLAMA_EXAMPLE_SERVER}).set_env("LLAMA_ARG_HOST"));
    add_opt(common_arg(
        {"-ot", "--override-tensor"}, "<tensor name pattern>=<buffer type>,...",
        "override tensor buffer type",
        [](common_params & params, const std::string & value) {
            parse_tensor_buffer_overrides(value, params.tensor_buft_overrides);
        }
    ));
    add_opt(common_arg(
        {"--draft", "--draft-n", "--draft-max"}, "N",
        "the argument has been removed. use --spec-draft-n-max or --spec-ngram-mod-n-max",
        [](common_params & /*params*/, int /*value*/) {
            arg_removed("use --spec-draft-n-max or --spec-ngram-mod-n-max");
        }
    ).set_spec().set_examples({LLAMA_EXAMPLE_SPECULATIVE, LLAMA_EXAMPLE_SERVER}).set_env("LLAMA_ARG_DRAFT_MAX"));
    return ctx_arg;
}

void common_params_add_preset_options(std::vector<common_arg> & args) {
    args.push_back(common_arg(
        {"load-on-startup"}, "NAME",
        "in server router mode, autoload this model on startup",
        [](common_params &, const std::string &) { /* unused */ }
    ).set_env(COMMON_ARG_PRESET_LOAD_ON_STARTUP).set_preset_only());
}
'''

V036_COMMON_H = '''#pragma once

#define DIRECTORY_SEPARATOR '/'

struct common_cpu_params {
    int      n_threads                   = -1;
    bool     cpumask[GGML_MAX_N_THREADS] = {false}; // CPU affinity mask.
    bool     mask_valid                  = false;   // Default: any CPU
};

struct common_params_sampling {
    uint32_t seed = LLAMA_DEFAULT_SEED; // the seed used to initialize llama_sampler
    float    temp = 0.80f; // <= 0.0 to sample greedily, 0.0 to not output probabilities
    bool     no_perf = false; // disable performance metrics
};

struct common_params_model {
    std::string path = ""; // model local path                                           // NOLINT
    std::string url  = ""; // model url to download                                      // NOLINT
};

struct common_params {
    int32_t n_predict             =    -1; // max. number of new tokens to predict, -1 == no limit
    int32_t n_ctx                 =     0; // context size, 0 == context the model was trained with
    int32_t n_parallel            =     1; // number of parallel sequences to decode
    uint32_t fit_params_min_ctx   =  4096;

    enum llama_flash_attn_type   flash_attn_type   = LLAMA_FLASH_ATTN_TYPE_AUTO; // whether to use Flash Attention

    common_cpu_params cpuparams;

    struct common_params_sampling    sampling;
    struct common_params_model model;
    struct common_params_model mmproj;

    std::string prompt = "";
    std::vector<llama_model_tensor_buft_override> tensor_buft_overrides;

    bool use_color  = false; // use color to distinguish generations and inputs
    bool use_jinja  = true;  // NOLINT
    bool ctx_shift  = false; // context shift on infinite text generation
    bool kv_unified = false; // enable unified KV cache
    bool no_perf    = false; // disable performance metrics
    bool no_kv_offload = false; // disable KV offloading
    std::vector<std::string> hostnames = {"127.0.0.1"}; // NOLINT
};
'''

V036_SERVER = '''int llama_server(int argc, char ** argv);

// to be used via CLI (argc / argv are used by router mode only)
int llama_server(common_params & params, int argc, char ** argv);

int llama_server(int argc, char ** argv) {
    common_params params;

    if (!common_params_parse(argc, argv, params, LLAMA_EXAMPLE_SERVER)) {
        return 1;
    }

    const int result = llama_server(params, argc, argv);
    return result;
}

int llama_server(common_params & params, int argc, char ** argv) {
    if (params.n_parallel < 0) {
        SRV_TRC("%s", "n_parallel is set to auto, using n_parallel = 4 and kv_unified = true\\n");

        params.n_parallel = 4;
        params.kv_unified = true;
    }
    return 0;
}
'''

V036_TASK = '''// metrics definition: https://prometheus.io/docs/practices/naming/#metric-names
std::string server_task_result_metrics::to_metrics() {
    const std::vector<metric_item> counters = {
        {
            "prompt_tokens_total",
            "Number of prompt tokens processed, excluding cached tokens",
            (double) metrics.prompt.count
        }, {
            "prompt_tokens_cached_total",
            "Number of prompt tokens reused from the cache",
            (double) metrics.n_prompt_cached
        },
    };

    const std::vector<metric_item> gauges = {
        {
            "requests_processing",
            "Number of requests processing",
            (double) n_processing_slots
        },
    };

    std::stringstream prometheus;

    auto add_items = [&prometheus](const char * type, const std::vector<metric_item> & items) {
        for (const auto & item : items) {
            prometheus << "# HELP llamacpp:" << item.name << " " << item.description << "\\n"
                       << "# TYPE llamacpp:" << item.name << " " << type             << "\\n"
                       << "llamacpp:"        << item.name << " " << item.value       << "\\n";
        }
    };

    add_items("counter", counters);
    add_items("gauge",   gauges);

    if (!metrics.n_accepted_per_pos.empty()) {
        prometheus << "# HELP llamacpp:spec_decode_num_accepted_tokens_per_pos_total"
                      " Accepted tokens per draft position\\n"
                   << "# TYPE llamacpp:spec_decode_num_accepted_tokens_per_pos_total counter\\n";
    }

    return prometheus.str();
}
'''

V036_CONTEXT = '''void server_context_impl::update_slots() {
    const char * LLAMA_SERVER_SLOTS_DEBUG = getenv("LLAMA_SERVER_SLOTS_DEBUG");
    const char * host = getenv("LLAMA_ARG_HOST"); // read again here: arg.cpp's declaration wins
}
'''

V036_HTTP = '''struct gcp_params {
    gcp_params() {
        port = std::stoi(getenv("AIP_HTTP_PORT", "8080"));
    }
    static std::string getenv(const char * name, const std::string & default_value) {
        const auto * value = std::getenv(name);
        return value ? value : default_value;
    }
};
'''

V036_SCHEMA = '''namespace server_schema {

std::vector<std::unique_ptr<field>> make_llama_cmpl_schema(const common_params & params_base, task_params & params) {
    std::vector<std::unique_ptr<field>> fields;
    auto add = [&](field * f) {
        fields.emplace_back(f);
    };

    add((new field_nested("stream_options"))
        ->add_subfield((new field_bool("include_usage", params.include_usage))
            ->set_desc("Whether to include usage information in the stream"))
        ->set_desc("Additional options for streaming responses"));

    add((new field_bool("cache_prompt", params.cache_prompt))
        ->set_desc("Re-use KV cache from a previous request if possible"));

    add((new field_num("n_predict", params.n_predict))
        ->set_hard_limits(-1, INT32_MAX)
        ->add_alias("max_completion_tokens")
        ->add_alias("max_tokens")
        ->set_desc("Set the maximum number of tokens to predict"));

    return fields;
}

}
'''


def line_of(text: str, needle: str, nth: int = 1) -> int:
    """The line (1-based) of the nth line of `text` that holds `needle`."""
    lines = [n for n, line in enumerate(text.split("\n"), 1) if needle in line]
    return lines[nth - 1]


def v030_files(n_ctx: str = "0") -> dict[str, dict[str, bytes]]:
    header = (V030_COMMON_H % {"n_ctx": n_ctx}).encode()
    server = V030_SERVER.encode()
    return {FLAG: {"common/arg.cpp": V030_ARG.encode(), "common/common.h": header,
                   "examples/server/server.cpp": server},
            ENV: {"common/arg.cpp": V030_ARG.encode(), "common/common.h": header,
                  "common/common.cpp": V030_COMMON_CPP.encode(), "examples/server/server.cpp": server},
            METRIC: {"examples/server/server.cpp": server},
            REQUEST: {"examples/server/server.cpp": server}}


def v036_files() -> dict[str, dict[str, bytes]]:
    server = {"tools/server/server.cpp": V036_SERVER.encode(), "tools/server/server-task.cpp": V036_TASK.encode(),
              "tools/server/server-context.cpp": V036_CONTEXT.encode(), "tools/server/server-http.cpp":
              V036_HTTP.encode(), "tools/server/server-schema.cpp": V036_SCHEMA.encode()}
    common = {"common/arg.cpp": V036_ARG.encode(), "common/common.h": V036_COMMON_H.encode()}
    return {FLAG: {**common, "tools/server/server.cpp": server["tools/server/server.cpp"]},
            ENV: {**common, **server}, METRIC: server, REQUEST: server}


def surface(files: dict[str, dict[str, bytes]]) -> dict[tuple[str, str], Item]:
    return {i.key: i for i in extract_cpp.extract(files, ["common/arg.cpp"])}


@pytest.fixture(scope="module")
def v030() -> dict[tuple[str, str], Item]:
    return surface(v030_files())


@pytest.fixture(scope="module")
def v036() -> dict[tuple[str, str], Item]:
    return surface(v036_files())


def names(found: dict, kind: str) -> set[str]:
    return {name for k, name in found if k == kind}


# --- flags ------------------------------------------------------------------------------------------------------

def test_0_3_0_the_server_keeps_common_options_and_its_own(v030):
    # --color is the CLI's only; --rpc is declared under #ifdef GGML_USE_RPC, which a build may define
    assert names(v030, FLAG) == {"--help", "--ctx-size", "--no-context-shift", "--temp", "--parallel",
                                 "--lora-scaled", "--host", "--metrics", "--threads-http", "--rpc"}


def test_0_3_0_a_flags_default_is_its_fields_initializer_in_common_h(v030):
    ctx = v030[(FLAG, "--ctx-size")]
    assert (ctx.aliases, ctx.default, ctx.value, ctx.detail) == (("-c",), "0", 0, "value: N")
    assert (ctx.path, ctx.line) == ("common/arg.cpp", line_of(V030_ARG, "add_opt(llama_arg(", 2))
    assert (ctx.default_path, ctx.default_line) == ("common/common.h", line_of(V030_COMMON_H, "int32_t n_ctx "))
    assert ctx.help == "size of the prompt context (default: %d, 0 = loaded from model)"  # the format, as written
    temp = v030[(FLAG, "--temp")]  # params.sparams.temp: through `struct gpt_sampler_params sparams;`
    assert (temp.default, temp.value, temp.default_line) == ("0.80f", 0.8, line_of(V030_COMMON_H, "float   temp"))
    host = v030[(FLAG, "--host")]
    assert (host.default, host.value) == ('"127.0.0.1"', "127.0.0.1")
    lora = v030[(FLAG, "--lora-scaled")]  # two values; a vector without an initializer is empty
    assert (lora.detail, lora.default, lora.value) == ("values: FNAME SCALE", "{}", [])


@pytest.mark.parametrize("n_ctx,value", [("0", 0), ("4096", 4096), ("8 * 1024", NO_VALUE)])
def test_the_default_follows_the_header(n_ctx, value):
    ctx = surface(v030_files(n_ctx))[(FLAG, "--ctx-size")]
    assert (ctx.default, ctx.value) == (n_ctx, value)
    assert ctx.computed == (value is NO_VALUE)


def test_0_3_0_a_switch_has_its_fields_default(v030):
    # `params.ctx_shift = false;`: --no-context-shift leaves ctx_shift at its default, true (as argparse's
    # store_false has its dest's default); `params.endpoint_metrics = true;`: --metrics is off by default
    shift = v030[(FLAG, "--no-context-shift")]
    assert (shift.default, shift.value, shift.detail) == ("true", True, "")
    assert shift.default_line == line_of(V030_COMMON_H, "bool ctx_shift")
    assert v030[(FLAG, "--metrics")].value is False and v030[(FLAG, "--help")].aliases == ("-h", "--usage")


def test_0_3_0_a_setting_the_server_changes_after_parsing_is_computed(v030):
    threads = v030[(FLAG, "--threads-http")]
    assert threads.computed and threads.default.startswith("-1 (after parsing: params.n_threads_http = std::max(")
    where = f"examples/server/server.cpp:{line_of(V030_SERVER, 'params.n_threads_http =')}"
    assert f"if params.n_threads_http < 1, {where})" in threads.default
    assert threads.default_line == line_of(V030_COMMON_H, "n_threads_http")  # still where it is written


def test_0_3_36_the_server_keeps_what_it_is_given(v036):
    flags = names(v036, FLAG)
    assert "--color" not in flags  # set_examples without the server
    assert "--prompt" not in flags  # set_excludes({LLAMA_EXAMPLE_SERVER})
    assert "--mmproj" in flags  # set_examples(mmproj_examples), a list declared at file level with the server
    assert "load-on-startup" not in flags  # a preset's option, not the command line's
    assert {"--version", "--cpu-mask", "--ctx-size", "--predict", "--perf", "--context-shift", "--kv-unified",
            "--kv-offload", "--flash-attn", "--parallel", "--temp", "--host", "--override-tensor", "--draft"} <= flags


def test_0_3_36_the_servers_own_declaration_and_default(v036):
    parallel = v036[(FLAG, "--parallel")]
    # declared twice, under `if (ex == LLAMA_EXAMPLE_SERVER)` and its else: the server's, and the per-example
    # default -1 of the top of the function, not the field's 1; the server then makes -1 into 4
    assert parallel.help == "number of server slots (default: %d, -1 = auto)"
    assert (parallel.default_path, parallel.default_line) == ("common/arg.cpp",
                                                              line_of(V036_ARG, "params.n_parallel = -1;"))
    assert parallel.default.startswith("-1 (after parsing: params.n_parallel = 4 if params.n_parallel < 0, "
                                       f"tools/server/server.cpp:{line_of(V036_SERVER, 'params.n_parallel = 4;')})")
    predict = v036[(FLAG, "--predict")]  # `ex == LLAMA_EXAMPLE_COMPLETION ? a : b`: the server's is b
    assert predict.help == "number of tokens to predict (default: %d, -1 = infinity)"
    assert (predict.default, predict.value) == ("-1", -1)
    temp = v036[(FLAG, "--temp")]
    assert (temp.default, temp.aliases) == ("0.80f", ("--temperature",))  # the MTMD override is not the server's


def test_an_unconditional_assignment_at_the_top_is_every_examples_default():
    common = V036_ARG.replace(").set_examples({LLAMA_EXAMPLE_COMPLETION, LLAMA_EXAMPLE_CLI}));", "));", 1)
    files = v036_files()
    files[FLAG]["common/arg.cpp"] = common.encode()
    color = surface({FLAG: files[FLAG]})[(FLAG, "--color")]
    assert (color.default, color.computed) == ("tty_can_use_colors()", True)
    assert (color.default_path, color.default_line) == ("common/arg.cpp", line_of(V036_ARG, "params.use_color = tty"))


def test_0_3_36_negatable_pairs(v036):
    shift = v036[(FLAG, "--context-shift")]
    assert (shift.aliases, shift.detail, shift.default, shift.value) == (
        ("--no-context-shift",), "off: --no-context-shift", "false", False)
    offload = v036[(FLAG, "--kv-offload")]
    assert offload.aliases == ("-kvo", "-nkvo", "--no-kv-offload") and offload.detail == "off: -nkvo, --no-kv-offload"
    # `params.no_kv_offload = !value;`: the flag is the field negated, so on by default
    assert (offload.default, offload.value, offload.default_line) == ("true", True,
                                                                      line_of(V036_COMMON_H, "bool no_kv_offload"))
    assert v036[(FLAG, "--perf")].value is True
    unified = v036[(FLAG, "--kv-unified")]  # false as written; the server turns it on when -np is auto
    assert unified.computed and unified.default.startswith("false (after parsing: params.kv_unified = true if ")


def test_0_3_36_which_field_a_handler_sets(v036):
    host = v036[(FLAG, "--host")]  # filled by push_back: the vector's initializer
    assert (host.default, host.value) == ('{"127.0.0.1"}', ["127.0.0.1"])
    mask = v036[(FLAG, "--cpu-mask")]  # `mask_valid = true` does not depend on the value: not the flag's field
    assert (mask.default, mask.value) == (None, NO_VALUE)
    flash = v036[(FLAG, "--flash-attn")]  # assigned under tests of the value: an enumerator, computed
    assert flash.computed and flash.default == "LLAMA_FLASH_ATTN_TYPE_AUTO" and flash.detail == "value: [on|off|auto]"
    ctx = v036[(FLAG, "--ctx-size")]  # the first field assigned the value, not fit_params_min_ctx
    assert (ctx.default, ctx.default_line) == ("0", line_of(V036_COMMON_H, "int32_t n_ctx "))
    tensor = v036[(FLAG, "--override-tensor")]  # a hint with spaces is one value
    assert tensor.detail == "value: <tensor name pattern>=<buffer type>,..." and tensor.default is None
    version = v036[(FLAG, "--version")]  # a switch that sets nothing is off
    assert (version.default, version.value, version.default_path) == ("false", False, "")
    draft = v036[(FLAG, "--draft")]
    assert draft.deprecated and draft.aliases == ("--draft-n", "--draft-max")
    assert not v036[(FLAG, "--ctx-size")].deprecated


# --- environment variables --------------------------------------------------------------------------------------

def test_an_options_variable_has_its_default(v030, v036):
    for found, arg, header in ((v030, V030_ARG, V030_COMMON_H), (v036, V036_ARG, V036_COMMON_H)):
        ctx = found[(ENV, "LLAMA_ARG_CTX_SIZE")]
        assert (ctx.default, ctx.value, ctx.detail) == ("0", 0, "sets --ctx-size")
        assert (ctx.path, ctx.line) == ("common/arg.cpp", line_of(arg, '.set_env("LLAMA_ARG_CTX_SIZE")'))
        assert (ctx.default_path, ctx.default_line) == ("common/common.h", line_of(header, "int32_t n_ctx "))
    assert v036[(ENV, "LLAMA_ARG_N_PARALLEL")].default == v036[(FLAG, "--parallel")].default


def test_a_pairs_variable_is_also_read_negated_where_the_code_says_so(v030, v036):
    # 0.3.36 reads LLAMA_ARG_NO_<X> for a pair (string_replace_all in get_value_from_env); 0.3.0 has no pairs, and
    # its LLAMA_ARG_NO_CONTEXT_SHIFT is a switch's own variable
    negated = v036[(ENV, "LLAMA_ARG_NO_CONTEXT_SHIFT")]
    assert (negated.default, negated.value, negated.detail) == ("unset", False, "sets --no-context-shift")
    assert v036[(ENV, "LLAMA_ARG_NO_KV_OFFLOAD")].detail == "sets --no-kv-offload"
    assert (ENV, "LLAMA_ARG_NO_CTX_SIZE") not in v036  # not a pair
    old = v030[(ENV, "LLAMA_ARG_NO_CONTEXT_SHIFT")]
    assert (old.default, old.detail) == ("true", "sets --no-context-shift")


def test_plain_reads_of_the_environment(v030, v036):
    debug = v036[(ENV, "LLAMA_SERVER_SLOTS_DEBUG")]
    assert (debug.default, debug.value, debug.path) == ("nullptr", None, "tools/server/server-context.cpp")
    port = v036[(ENV, "AIP_HTTP_PORT")]  # the server's own getenv(name, default)
    assert (port.default, port.value) == ('"8080"', "8080")
    # the option's declaration in arg.cpp (the env registry) wins over a read elsewhere
    host = v036[(ENV, "LLAMA_ARG_HOST")]
    assert (host.path, host.detail) == ("common/arg.cpp", "sets --host")
    cache = v030[(ENV, "LLAMA_CACHE")]
    assert (cache.path, cache.line) == ("common/common.cpp", line_of(V030_COMMON_CPP, 'getenv("LLAMA_CACHE")'))


# --- metrics and request fields ---------------------------------------------------------------------------------

def test_metrics_are_named_with_the_prefix_the_emitter_writes(v030, v036):
    assert names(v030, METRIC) == {"llamacpp:prompt_tokens_total", "llamacpp:n_decode_total",
                                   "llamacpp:kv_cache_usage_ratio"}
    ratio = v030[(METRIC, "llamacpp:kv_cache_usage_ratio")]
    assert (ratio.detail, ratio.help) == ("gauge", "KV-cache usage. 1 means 100 percent usage.")
    assert ratio.line == line_of(V030_SERVER, '"kv_cache_usage_ratio"')
    assert names(v036, METRIC) == {"llamacpp:prompt_tokens_total", "llamacpp:prompt_tokens_cached_total",
                                   "llamacpp:requests_processing",
                                   "llamacpp:spec_decode_num_accepted_tokens_per_pos_total"}
    assert v036[(METRIC, "llamacpp:requests_processing")].detail == "gauge"  # add_items("gauge", gauges)
    per_pos = v036[(METRIC, "llamacpp:spec_decode_num_accepted_tokens_per_pos_total")]
    assert (per_pos.detail, per_pos.help) == ("counter", "Accepted tokens per draft position")
    renamed = surface({METRIC: {"tools/server/server-task.cpp": V036_TASK.replace("llamacpp:", "lcpp:").encode()}})
    assert "lcpp:prompt_tokens_total" in names(renamed, METRIC)


def test_request_fields(v030, v036):
    assert names(v030, REQUEST) == {"stream", "cache_prompt", "n_predict", "max_tokens", "temperature"}
    assert (v030[(REQUEST, "cache_prompt")].default, v030[(REQUEST, "cache_prompt")].value) == ("false", False)
    assert v030[(REQUEST, "temperature")].default == "default_sparams.temp"  # the server's --temp: computed
    n_predict = v036[(REQUEST, "n_predict")]
    assert n_predict.aliases == ("max_completion_tokens", "max_tokens") and n_predict.detail == "field_num"
    assert n_predict.help == "Set the maximum number of tokens to predict" and n_predict.computed
    assert v036[(REQUEST, "stream_options.include_usage")].help == "Whether to include usage information in the stream"


def test_broken_code_gives_what_it_can_and_never_raises():
    broken = V036_ARG.replace('{"-c", "--ctx-size"}', '{"-c", --ctx-size"')  # an unterminated string
    found = surface({FLAG: {"common/arg.cpp": broken.encode(), "common/common.h": b"struct common_params { int"}})
    assert "--ctx-size" not in names(found, FLAG) and len(names(found, FLAG)) == 14
    assert found[(FLAG, "--parallel")].value == -1  # the per-example default, in arg.cpp
    temp = found[(FLAG, "--temp")]  # its struct is not there: the field as written, computed
    assert (temp.default, temp.computed) == ("params.sampling.temp", True)
    assert surface({FLAG: {"common/arg.cpp": b"\xff\xfe add_opt((( struct"}, ENV: {"x.cpp": b"getenv("},
                    METRIC: {"y.cpp": b'"# HELP '}, REQUEST: {"z.cpp": b"json_value("}}) == {}


# --- which files, by language -----------------------------------------------------------------------------------

def test_the_registry_selects_llama_cpps_cpp_files(kb_root):
    from verifier import kb as kb_module

    spec = SurfaceSpec.of(kb_module.load(kb_root).engines["llama-cpp"])
    chosen = spec.select(["common/arg.cpp", "common/common.h", "common/README.md", "tools/server/server-task.cpp",
                          "tools/server/server-task.h", "tools/server/bench/bench.py", "examples/server/server.cpp"])
    assert chosen["flag"] == ["common/arg.cpp", "common/common.h", "examples/server/server.cpp"]
    assert chosen["metric"] == ["examples/server/server.cpp", "tools/server/server-task.cpp"]
    assert chosen["env"] == ["common/arg.cpp", "common/common.h", "examples/server/server.cpp",
                             "tools/server/server-task.cpp"]
    assert spec.primary == ("common/arg.cpp",)


def test_each_file_goes_to_the_extractor_of_its_language():
    chosen = {FLAG: ["common/arg.cpp", "common/common.h", "pkg/args.py"]}
    contents = {"common/arg.cpp": V036_ARG.encode(), "common/common.h": V036_COMMON_H.encode(),
                "pkg/args.py": b"def f(parser):\n    parser.add_argument('--ctx-size', default=7)\n"
                               b"    parser.add_argument('--py-only', default=1)\n"}
    found = {i.name: i for i in extract(chosen, contents, [])}
    assert found["--py-only"].path == "pkg/args.py" and found["--parallel"].path == "common/arg.cpp"
    assert found["--ctx-size"].path == "pkg/args.py"  # defined in both: Python's (the first language) is kept


# --- end to end ---------------------------------------------------------------------------------------------------

def _sdist(version: str, n_ctx: str) -> bytes:
    vendored = {"common/arg.cpp": V036_ARG, "common/common.h": V036_COMMON_H.replace("=     0; // context size",
                                                                                   f"=     {n_ctx}; // context size"),
                "tools/server/server.cpp": V036_SERVER, "tools/server/server-task.cpp": V036_TASK,
                "tools/server/server-context.cpp": V036_CONTEXT}
    files = {f"vendor/llama.cpp/{p}": t.encode() for p, t in vendored.items()}
    files["llama_cpp/server/app.py"] = b"import os\nos.getenv('NOT_LLAMA_CPP')\n"  # the outer package: not read
    return make_sdist(files, top=f"llama_cpp_python-{version}")


def test_gotchas_surface_reads_a_release_from_the_index(kb_root, monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(kb_root)
    monkeypatch.setenv("GOTCHAS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with IndexServer() as index:
        index.add("llama-cpp-python", "llama_cpp_python-0.3.1.tar.gz", _sdist("0.3.1", "4096"),
                  upload_time="2024-10-01T00:00:00Z")
        index.add("llama-cpp-python", "llama_cpp_python-0.3.2.tar.gz", _sdist("0.3.2", "0"),
                  upload_time="2024-11-01T00:00:00Z")
        monkeypatch.setenv("PIP_INDEX_URL", index.url)
        code, out, err = run_cli(capsys, "surface", "llama-cpp", "0.3.1", "--ledger", str(tmp_path / "ledger"))
        assert code == 0, err
        field_line = line_of(V036_COMMON_H, "int32_t n_ctx ")
        assert (f"  --ctx-size, -c  default 4096 (common/common.h:{field_line})  "
                f"common/arg.cpp:{line_of(V036_ARG, 'add_opt(common_arg(', 4)}") in out
        assert "llamacpp:prompt_tokens_cached_total  counter  tools/server/server-task.cpp:" in out
        assert "not in the ledger's surface file" in err
        code, out, err = run_cli(capsys, "surface", "llama-cpp", "0.3.2", "--kind", "env", "--format", "json",
                                 "--ledger", str(tmp_path / "ledger"))
    assert code == 0, err
    items = {i["name"]: i for i in json.loads(out)["items"]}
    assert items["LLAMA_ARG_CTX_SIZE"]["value"] == 0 and items["LLAMA_ARG_CTX_SIZE"]["detail"] == "sets --ctx-size"
    assert "NOT_LLAMA_CPP" not in items and "LLAMA_SERVER_SLOTS_DEBUG" in items
    assert not (tmp_path / "ledger").exists()  # `surface` records nothing


# --- the real releases ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """The surface of a real release, read from pip's index (the sdist cached as `gotchas verify` caches it)."""
    import os

    found = {}

    def read(version: str) -> dict[str, dict]:
        if version not in found:
            from verifier.cli import main

            out = tmp_path_factory.mktemp("surface") / "out.json"
            previous = os.getcwd()
            os.chdir(REPO)
            try:
                import contextlib
                import io

                buffer = io.StringIO()
                with contextlib.redirect_stdout(buffer):
                    code = main(["surface", "llama-cpp", version, "--format", "json", "--source", "pypi",
                                 "--ledger", str(out.parent / "ledger")])
            finally:
                os.chdir(previous)
            assert code == 0
            found[version] = {(i["kind"], i["name"]): i for i in json.loads(buffer.getvalue())["items"]}
        return found[version]

    return read


@pytest.mark.network
def test_real_0_3_36(real):
    found = real("0.3.36")
    ctx = found[("flag", "--ctx-size")]
    # 0 as written (common/common.h), and computed: the server sizes the pool from --kv-unified-per-slot
    assert ctx["default"].startswith("0 (after parsing: params.n_ctx = ") and "value" not in ctx
    assert ctx["default_path"] == "common/common.h" and ctx["aliases"] == ["-c"]
    assert found[("env", "LLAMA_ARG_CTX_SIZE")]["detail"] == "sets --ctx-size"
    parallel = found[("flag", "--parallel")]
    assert parallel["default"].startswith("-1 (after parsing: params.n_parallel = 4") and parallel["aliases"] == ["-np"]
    assert parallel["default_path"] == "common/arg.cpp"  # the server's per-example default
    assert found[("flag", "--context-shift")]["value"] is False
    assert found[("flag", "--cache-reuse")]["value"] == 0
    assert ("flag", "--prompt") not in found and ("flag", "--mmproj") in found
    metrics = {name for kind, name in found if kind == "metric"}
    assert {"llamacpp:prompt_tokens_total", "llamacpp:prompt_tokens_cached_total",
            "llamacpp:spec_decode_num_drafts_total"} <= metrics and "llamacpp:kv_cache_usage_ratio" not in metrics
    assert found[("request", "n_predict")]["aliases"] == ["max_completion_tokens", "max_tokens"]


@pytest.mark.network
def test_real_0_3_0_and_0_3_9(real):
    old = real("0.3.0")
    assert old[("flag", "--ctx-size")]["value"] == 0 and old[("flag", "--parallel")]["value"] == 1
    assert old[("flag", "--no-context-shift")]["value"] is True
    assert old[("env", "LLAMA_ARG_CTX_SIZE")]["value"] == 0
    assert {"llamacpp:kv_cache_usage_ratio", "llamacpp:n_decode_total"} <= {n for k, n in old if k == "metric"}
    assert old[("request", "cache_prompt")]["value"] is False
    assert real("0.3.9")[("flag", "--ctx-size")]["value"] == 4096
