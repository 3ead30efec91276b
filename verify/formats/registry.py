"""Every versioned format `verify` defines, by schema name, and its JSON Schema text.

pipeline/formats.py adds the pipeline's own formats; `tinyrustlm-release schemas` writes them
all to manifests/schemas/ and a test keeps the committed files equal to the models.
"""

from __future__ import annotations

import json

from pydantic import BaseModel

from verify.formats.bundle_verification import BUNDLE_VERIFICATION_SCHEMA, BundleVerification
from verify.formats.cli_result import CLI_RESULT_SCHEMA, CliResult
from verify.formats.conformance import (
    CONFORMANCE_SCHEMA,
    CONFORMANCE_SCHEMA_V1,
    CONFORMANCE_SCHEMA_V2,
    ConformanceReport,
    ConformanceReportV1,
    ConformanceReportV2,
)
from verify.formats.fuzz import FUZZ_CAMPAIGN_SCHEMA, FuzzCampaign
from verify.formats.golden import GOLDEN_SCHEMA, GoldenVector
from verify.formats.lane_policy import POLICY_SCHEMA, LanePolicy
from verify.formats.manifest import MANIFEST_SCHEMA, ModuleManifest
from verify.formats.memory_plan import MEMORY_PLAN_SCHEMA, MemoryPlanDocument
from verify.formats.rebuild import REBUILD_ATTESTATION_SCHEMA, RebuildStatement
from verify.formats.receipt import (
    RECEIPT_SCHEMA,
    RECEIPT_SCHEMA_V1,
    CapabilityReceipt,
    CapabilityReceiptV1,
)
from verify.formats.report import REPORT_SCHEMA, VerificationReport
from verify.formats.trusted_keys import (
    TRUSTED_KEYS_SCHEMA,
    TRUSTED_KEYS_SCHEMA_V2,
    TrustedKeysFile,
    TrustedKeysFileV2,
)

VERIFY_FORMATS: dict[str, type[BaseModel]] = {
    MANIFEST_SCHEMA: ModuleManifest,
    REPORT_SCHEMA: VerificationReport,
    GOLDEN_SCHEMA: GoldenVector,
    RECEIPT_SCHEMA_V1: CapabilityReceiptV1,
    RECEIPT_SCHEMA: CapabilityReceipt,
    TRUSTED_KEYS_SCHEMA: TrustedKeysFile,
    TRUSTED_KEYS_SCHEMA_V2: TrustedKeysFileV2,
    POLICY_SCHEMA: LanePolicy,
    BUNDLE_VERIFICATION_SCHEMA: BundleVerification,
    FUZZ_CAMPAIGN_SCHEMA: FuzzCampaign,
    CONFORMANCE_SCHEMA_V1: ConformanceReportV1,
    CONFORMANCE_SCHEMA_V2: ConformanceReportV2,
    CONFORMANCE_SCHEMA: ConformanceReport,
    REBUILD_ATTESTATION_SCHEMA: RebuildStatement,
    CLI_RESULT_SCHEMA: CliResult,
    MEMORY_PLAN_SCHEMA: MemoryPlanDocument,
}


def schema_json(model: type[BaseModel]) -> str:
    """The JSON Schema text exactly as committed under manifests/schemas/<name>.json."""
    return json.dumps(model.model_json_schema(), indent=2, sort_keys=True) + "\n"
