//! The subcommands. Each returns an exit code or a `CliError`; nothing here panics on input.

use std::time::Instant;

use tinyrustlm_core::kernels;
use tinyrustlm_core::memory;
use tinyrustlm_core::model::{kind_name, Model};
use tinyrustlm_core::{selftest, TrResult, ABI_VERSION, RUNTIME_SEMANTICS};

use crate::args::{self, Args};
use crate::error::{outln, CliError, EXIT_CHECK_FAILED, EXIT_OK};
use crate::generate::{generate, text_of};
use crate::model_file::{read_file, read_model};
use crate::{chat, golden, json, session_flags, sha256};

const USAGE: &str = "usage: tinyrustlm COMMAND
  self-test                       run the embedded startup self-test (one line per test)
  inspect-model FILE [--json]     validate a model (format v1 or v2) and print its header and directory
    [--plan --context N --workers W]  the memory plan itemized for that context and lane (W = 0:
                                   an unthreaded lane; 1..=8: the threads lane), loaded in place
  run --model FILE --prompt TEXT [--seed N] [--max-tokens K] [--temperature T] [--top-k K]
      [--top-p P] [--repetition-penalty R] [--context C] [--json]
  chat --model FILE --turns FILE [--max-tokens K] [sampler flags and --context as run] [--no-reuse] [--json]
                                  a conversation, one turn per line, in one session that keeps its K/V
  golden --out DIR --small-model FILE --source-revision REV --generated-utc TIME
                                  regenerate tests/golden/ from the scalar oracle";

pub fn dispatch(argv: &[String]) -> Result<u8, CliError> {
    let rest = argv.get(1..).unwrap_or(&[]);
    match argv.first().map(String::as_str) {
        Some("self-test") => self_test(),
        Some("inspect-model") => inspect_model(&args::parse(rest, &["context", "workers"], &["json", "plan"])?),
        Some("run") => run(&args::parse(rest, &session_flags::with(&["model", "prompt"]), &["json"])?),
        Some("chat") => {
            chat::command(&args::parse(rest, &session_flags::with(&["model", "turns"]), &["json", "no-reuse"])?)
        }
        Some("golden") => golden::command(&args::parse(rest, golden::VALUED, &[])?),
        Some("-h") | Some("--help") => {
            outln!("{USAGE}");
            Ok(EXIT_OK)
        }
        _ => Err(CliError::usage(USAGE.to_string())),
    }
}

fn self_test() -> Result<u8, CliError> {
    let start = Instant::now();
    let mut lines = Vec::new(); // printed after the run: the callback cannot return an error
    let result = selftest::run(&mut |name, result| {
        let status = if result == TrResult::Ok { "pass" } else { "FAIL" };
        lines.push(format!("{status} {name} ({})", result.name()));
    });
    let ms = start.elapsed().as_secs_f64() * 1e3;
    for line in lines {
        outln!("{line}");
    }
    let (scalar, simd) = kernels::path_counters();
    outln!(
        "self-test: {} in {ms:.2} ms; runtime_semantics {RUNTIME_SEMANTICS}, abi {ABI_VERSION}, \
         kernel set {}, scalar calls {scalar}, simd calls {simd}",
        result.name(),
        kernels::KERNEL_SET
    );
    Ok(if result == TrResult::Ok { EXIT_OK } else { EXIT_CHECK_FAILED })
}

fn inspect_model(args: &Args) -> Result<u8, CliError> {
    let path = args.positional.first().ok_or_else(|| CliError::usage("inspect-model FILE".into()))?;
    let as_json = args.switch("json");
    let bytes = read_file(path)?;
    let digest = sha256::hex(&bytes);
    let model = match Model::load(bytes) {
        Ok(model) => model,
        Err(code) => {
            if as_json {
                let fields = [
                    ("ok", "false".to_string()),
                    ("result", json::string(code.name())),
                    ("code", code.code().to_string()),
                    ("sha256", json::string(&digest)),
                ];
                outln!("{}", json::object(&fields, false));
            }
            return Err(CliError::runtime(path, code));
        }
    };
    if args.switch("plan") {
        return print_plan(&model, args);
    }
    let c = &model.config;
    let plan = memory::plan(c, model.resident_bytes(), c.max_context)
        .map_err(|code| CliError::runtime("memory plan", code))?;
    let header = [
        ("kernel_tier", json::string(c.tier.name())),
        ("n_layers", c.n_layers.to_string()),
        ("d_model", c.d_model.to_string()),
        ("d_ff", c.d_ff.to_string()),
        ("vocab", c.vocab.to_string()),
        ("n_heads", c.n_heads.to_string()),
        ("n_kv_heads", c.n_kv_heads.to_string()),
        ("head_dim", c.head_dim.to_string()),
        ("max_context", c.max_context.to_string()),
        ("rms_eps", json::bits(c.rms_eps)),
        ("tied_embeddings", c.tied_embeddings().to_string()),
        ("tensor_count", c.tensor_count.to_string()),
        ("file_length", c.file_length.to_string()),
    ];
    if as_json {
        let tensors = json::list(&model.entries, |e| {
            json::object(
                &[
                    ("kind", json::string(kind_name(e.kind))),
                    ("layer", e.layer.to_string()),
                    ("layout", json::string(e.layout.name())),
                    ("rows", e.rows.to_string()),
                    ("cols", e.cols.to_string()),
                    ("offset", e.offset.to_string()),
                    ("stored_bytes", e.stored_bytes.to_string()),
                ],
                false,
            )
        });
        let fields = [
            ("ok", "true".to_string()),
            ("result", json::string("Ok")),
            ("code", "0".to_string()),
            ("sha256", json::string(&digest)),
            ("header", json::object(&header, false)),
            ("tensors", tensors),
            ("peak_prefill_bytes", plan.peak_prefill.to_string()),
            ("steady_decode_bytes", plan.steady_decode.to_string()),
        ];
        outln!("{}", json::object(&fields, true));
        return Ok(EXIT_OK);
    }
    outln!("{path}: valid tinyrustlm model v1, sha256 {digest}");
    for (k, v) in header.iter() {
        outln!("  {k:<16} {v}");
    }
    outln!(
        "  {:<16} {:>5} {:<12} {:>6} {:>6} {:>10} {:>10}",
        "tensor",
        "layer",
        "layout",
        "rows",
        "cols",
        "offset",
        "bytes"
    );
    for e in model.entries.iter() {
        outln!(
            "  {:<16} {:>5} {:<12} {:>6} {:>6} {:>10} {:>10}",
            kind_name(e.kind),
            e.layer,
            e.layout.name(),
            e.rows,
            e.cols,
            e.offset,
            e.stored_bytes
        );
    }
    outln!(
        "  memory at max_context: peak prefill {} bytes, steady decode {} bytes",
        plan.peak_prefill,
        plan.steady_decode
    );
    Ok(EXIT_OK)
}

/// `inspect-model --plan`: the itemized plan (crates/core/CONTRACT.md §5) as JSON.
fn print_plan(model: &Model, args: &Args) -> Result<u8, CliError> {
    let c = &model.config;
    let (context, workers) = (args.get("context", c.max_context)?, args.get("workers", 0u32)?);
    let plan = memory::plan_loaded(c, model.resident_bytes(), context, workers)
        .map_err(|code| CliError::runtime("memory plan", code))?;
    let parts: Vec<(&str, String)> =
        memory::PART_NAMES.iter().zip(plan.parts()).map(|(n, v)| (*n, v.to_string())).collect();
    let fields = [
        ("context", context.to_string()),
        ("workers", workers.to_string()),
        ("parts", json::object(&parts, false)),
        ("largest_part", json::string(memory::PART_NAMES[plan.largest_part()])),
        ("peak_load_bytes", plan.peak_load.to_string()),
        ("peak_prefill_bytes", plan.peak_prefill.to_string()),
        ("steady_decode_bytes", plan.steady_decode.to_string()),
        ("peak_bytes", plan.peak().to_string()),
        ("wasm32_budget_bytes", memory::WASM32_BUDGET.to_string()),
    ];
    outln!("{}", json::object(&fields, true));
    Ok(EXIT_OK)
}

fn run(args: &Args) -> Result<u8, CliError> {
    let (model, digest) = read_model(&args.required("model")?)?;
    let prompt = args.required("prompt")?;
    let (config, max_tokens) = session_flags::session_config(args, &model)?;
    let sampler = config.sampler;
    let out = generate(&model, config.clone(), &prompt, max_tokens)?;
    let decode_total: f64 = out.decode_ms.iter().sum();
    let tps = if decode_total > 0.0 { out.decode_ms.len() as f64 / (decode_total / 1e3) } else { 0.0 };
    let text = text_of(&out.tokens);
    if args.switch("json") {
        let fields = [
            ("schema", json::string("tinyrustlm.run.v1")),
            ("runtime_semantics", RUNTIME_SEMANTICS.to_string()),
            ("kernel_set", json::string(kernels::kernel_set(model.config.tier))),
            ("model_sha256", json::string(&digest)),
            ("seed", config.seed.to_string()),
            ("stream", config.stream.to_string()),
            ("temperature", json::bits(sampler.temperature)),
            ("top_k", sampler.top_k.to_string()),
            ("top_p", json::bits(sampler.top_p)),
            ("repetition_penalty", json::bits(sampler.repetition_penalty)),
            ("prompt_tokens", json::list(&out.prompt_tokens, |t| t.to_string())),
            ("tokens", json::list(&out.tokens, |t| t.to_string())),
            ("text", json::string(&text)),
            ("stop", json::string(out.stop)),
            ("final_rng_state", json::string(&format!("0x{:016x}", out.final_rng.0))),
            ("prefill_ms", json::number(out.prefill_ms)),
            ("decode_ms", json::list(&out.decode_ms, |v| json::number(*v))),
            ("decode_tokens_per_s", json::number(tps)),
        ];
        outln!("{}", json::object(&fields, true));
        return Ok(EXIT_OK);
    }
    outln!("prompt tokens ({}): {:?}", out.prompt_tokens.len(), out.prompt_tokens);
    outln!("tokens ({}): {:?}", out.tokens.len(), out.tokens);
    outln!("text: {text:?}");
    outln!("stop: {}", out.stop);
    outln!("prefill: {:.3} ms for {} tokens", out.prefill_ms, out.prompt_tokens.len());
    let per: Vec<String> = out.decode_ms.iter().map(|v| format!("{v:.3}")).collect();
    outln!("decode per token (ms): [{}]", per.join(", "));
    outln!("decode: {tps:.1} tokens/s");
    Ok(EXIT_OK)
}
