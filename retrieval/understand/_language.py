"""The question's language (lingua, whose models ship in the wheel: offline, no download), and the honest
replies the service gives in that language when it cannot read the question without a language model."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from core import ENGLISH_FUNCTION_WORDS, words

__all__ = ["LANGUAGE_NAMES", "LANGUAGE_REPLIES", "DetectedLanguage", "detect_language", "language_reply"]

# ISO 639-1 -> English name (what the answer prompt asks the model to write in).
LANGUAGE_NAMES: dict[str, str] = {
    "en": "English",
    "es": "Spanish",
    "fr": "French",
    "de": "German",
    "pt": "Portuguese",
    "it": "Italian",
    "nl": "Dutch",
    "zh": "Chinese",
    "ja": "Japanese",
    "ko": "Korean",
    "ar": "Arabic",
    "hi": "Hindi",
    "ru": "Russian",
    "tr": "Turkish",
    "pl": "Polish",
}
_ENGLISH_REPLY = (
    "I can only read questions in English without a language model, and none is configured here. Please ask "
    "your question in English, or ask the service's administrator to configure a language model."
)
# Without an LLM: "I can only read English questions without a language model ...", in the patient's language.
LANGUAGE_REPLIES: dict[str, str] = {
    "es": "Sin un modelo de lenguaje solo puedo leer preguntas en inglés, y aquí no hay ninguno configurado. "
    "Por favor, haga su pregunta en inglés o pida al administrador del servicio que configure un modelo de "
    "lenguaje.",
    "fr": "Sans modèle de langage, je ne peux lire que des questions en anglais, et aucun n'est configuré "
    "ici. "
    "Veuillez poser votre question en anglais ou demander à l'administrateur du service de configurer un "
    "modèle de langage.",
    "de": "Ohne Sprachmodell kann ich nur Fragen auf Englisch lesen, und hier ist keines eingerichtet. Bitte "
    "stellen Sie Ihre Frage auf Englisch oder bitten Sie den Betreiber des Dienstes, ein Sprachmodell "
    "einzurichten.",
    "pt": "Sem um modelo de linguagem, só consigo ler perguntas em inglês, e não há nenhum configurado aqui. "
    "Por favor, faça a sua pergunta em inglês ou peça ao administrador do serviço que configure um modelo "
    "de linguagem.",
    "it": "Senza un modello linguistico posso leggere solo domande in inglese, e qui non ne è configurato "
    "nessuno. Per favore, ponga la domanda in inglese o chieda all'amministratore del servizio di "
    "configurare "
    "un modello linguistico.",
    "nl": "Zonder taalmodel kan ik alleen vragen in het Engels lezen, en hier is er geen ingesteld. Stel uw "
    "vraag in het Engels of vraag de beheerder van de dienst een taalmodel in te stellen.",
    "zh": "在没有语言模型的情况下，我只能阅读英文问题，而这里没有配置语言模型。"
    "请用英文提问，或请服务管理员配置语言模型。",
    "ja": "言語モデルがない場合、英語の質問しか読めません。ここには言語モデルが設定されていません。"
    "英語で質問するか、サービスの管理者に言語モデルの設定を依頼してください。",
    "ar": "بدون نموذج لغوي لا أستطيع قراءة الأسئلة إلا باللغة الإنجليزية، ولا يوجد نموذج مُعدّ هنا. "
    "يرجى طرح سؤالك باللغة الإنجليزية أو طلب إعداد نموذج لغوي من مسؤول الخدمة.",
    "hi": "भाषा मॉडल के बिना मैं केवल अंग्रेज़ी में पूछे गए प्रश्न पढ़ सकता हूँ, और यहाँ कोई भाषा मॉडल सेट नहीं है। "
    "कृपया अपना प्रश्न अंग्रेज़ी में पूछें या सेवा के व्यवस्थापक से भाषा मॉडल सेट करने के लिए कहें।",
    "ru": "Без языковой модели я могу читать только вопросы на английском, а здесь она не настроена. "
    "Пожалуйста, задайте вопрос на английском или попросите администратора сервиса настроить "
    "языковую модель.",
}

# Below this confidence a short text is read as English (the default): "asdkjh qwe" is no language at all.
_MIN_CONFIDENCE = 0.5


@dataclass(frozen=True, slots=True)
class DetectedLanguage:
    code: str  # ISO 639-1, lower case
    confidence: float

    @property
    def name(self) -> str:
        return LANGUAGE_NAMES.get(self.code, self.code)

    @property
    def english(self) -> bool:
        return self.code == "en"


@functools.cache
def _detector() -> Any:
    from lingua import Language, LanguageDetectorBuilder

    languages = [getattr(Language, name.upper()) for name in LANGUAGE_NAMES.values()]
    return LanguageDetectorBuilder.from_languages(*languages).build()


def detect_language(text: str) -> DetectedLanguage:
    """The language of ``text`` among :data:`LANGUAGE_NAMES`; English when unsure (fewer than two words in a
    Latin script, or a confidence below 0.5)."""
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return DetectedLanguage("en", 0.0)
    latin = sum(1 for ch in letters if ch.isascii() or "\u00c0" <= ch <= "\u024f") / len(letters)
    if latin > 0.9 and len(words(text)) < 2:
        return DetectedLanguage("en", 0.0)
    tokens = words(text)
    if latin > 0.9 and sum(1 for w in tokens if w in ENGLISH_FUNCTION_WORDS) >= max(2, 0.15 * len(tokens)):
        return DetectedLanguage("en", 1.0)
    values = _detector().compute_language_confidence_values(text)
    if not values:
        return DetectedLanguage("en", 0.0)
    top = values[0]
    code = top.language.iso_code_639_1.name.lower()
    if code != "en" and top.value < _MIN_CONFIDENCE and latin > 0.9:
        return DetectedLanguage("en", float(top.value))
    return DetectedLanguage(code, float(top.value))


def language_reply(code: str) -> str:
    """The honest reply, in language ``code`` where we have it (else English), to a question not read."""
    return LANGUAGE_REPLIES.get(code, _ENGLISH_REPLY)
