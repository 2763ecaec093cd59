// Hugging Face hub ids ("meta-llama/Llama-3.1-8B-Instruct") where a local path belongs: every
// LlamaFactory and TRL example starts with one, and shardtune reads local files only, so the
// refusal says how to fetch it and which line to change.
#pragma once

#include <string>

namespace st {

// owner/name (one '/', neither part empty or starting with '.'), and no such local path.
bool looks_like_hub_id(const std::string& path);

// "hf download meta-llama/Llama-3.1-8B-Instruct --local-dir models/Llama-3.1-8B-Instruct" (with
// --repo-type dataset for a dataset), for messages.
std::string hub_download_command(const std::string& id, bool dataset = false);
// The directory that command writes: models/Llama-3.1-8B-Instruct (data/<name> for a dataset).
std::string hub_download_directory(const std::string& id, bool dataset = false);
// "a Hugging Face hub id, not a local directory; shardtune downloads nothing: fetch it with
// `hf download ID --local-dir models/NAME`": the refusal's common part; the caller names the key
// and what to write there.
std::string hub_id_refusal(const std::string& id);

}  // namespace st
