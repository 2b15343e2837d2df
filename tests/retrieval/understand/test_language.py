"""The question's language: detected offline; without an LLM an honest reply in that language, with one the
rewriter is asked for English queries."""

from __future__ import annotations

import pytest

from retrieval.understand import QueryUnderstander, detect_language, language_reply
from tests._fakes import ScriptedLLM

QUESTIONS = {
    "es": "¿El tamoxifeno reduce la recurrencia del cáncer de mama después de la cirugía?",
    "fr": "Est-ce que la chimiothérapie après la chirurgie aide à guérir le cancer du sein ?",
    "de": "Hilft eine Chemotherapie nach der Operation bei Brustkrebs?",
    "pt": "O tamoxifeno reduz a recorrência do câncer de mama depois da cirurgia?",
    "zh": "他莫昔芬能降低乳腺癌术后复发的风险吗？",
    "ar": "هل يقلل التاموكسيفين من خطر عودة سرطان الثدي بعد الجراحة؟",
    "hi": "क्या सर्जरी के बाद टैमोक्सीफेन स्तन कैंसर के दोबारा होने का खतरा कम करता है?",
}


@pytest.mark.parametrize(("code", "question"), sorted(QUESTIONS.items()))
def test_detects_the_language(code: str, question: str) -> None:
    assert detect_language(question).code == code


@pytest.mark.parametrize(
    "question",
    [
        "CA 19 9 came back really high, is the whipple pointless?",
        "For diurnal systolic and diastolic BP, is dorzolamide-timolol fixed combination better than "
        "latanoprost?",
        "Does tamoxifen help?",
        "asdkjh qwe zzz",
    ],
)
def test_english_and_unreadable_text_stay_english(question: str) -> None:
    assert detect_language(question).code == "en"


@pytest.mark.parametrize(("code", "question"), sorted(QUESTIONS.items()))
async def test_without_an_llm_the_reply_is_honest_and_in_that_language(code: str, question: str) -> None:
    understanding = await QueryUnderstander(llm=None).understand(question)
    scope = understanding.scope
    assert not scope.in_scope and scope.reason == "language" and understanding.language == code
    assert scope.message == language_reply(code) and "English" not in scope.message


async def test_with_an_llm_the_rewriter_is_asked_for_english_queries() -> None:
    plan = {
        "corrected_question": "Does tamoxifen reduce breast cancer recurrence after surgery?",
        "intent": "treatment",
        "concepts": [{"text": "tamoxifen", "mesh": "Tamoxifen", "role": "intervention"}],
        "ladder": [
            '"tamoxifen"[tiab] AND "breast cancer"[tiab]',
            '"tamoxifen"[tiab]',
            '"breast cancer"[tiab]',
        ],
    }
    llm = ScriptedLLM(lambda _p: plan)
    understanding = await QueryUnderstander(llm=llm).understand(QUESTIONS["es"])
    assert understanding.path == "llm" and understanding.scope.in_scope and understanding.language == "es"
    assert understanding.plan.ladder[0] == '"tamoxifen"[tiab] AND "breast cancer"[tiab]'
    system = llm.seen[0][0]["content"]
    assert "every query in English" in system and llm.versions == ["rewrite_query@2"]


async def test_a_failed_llm_rewrite_declines_in_the_language() -> None:
    from llm import LLMUnavailable

    llm = ScriptedLLM(lambda _p: LLMUnavailable("down"))
    understanding = await QueryUnderstander(llm=llm).understand(QUESTIONS["fr"])
    assert understanding.scope.reason == "language" and understanding.scope.message == language_reply("fr")
